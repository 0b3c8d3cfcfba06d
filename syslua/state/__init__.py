"""Persistent state: the content-addressed store, snapshots, the journal, restoring recorded paths, and the lock.

Whole files are written through `fsutil.AtomicFile` (or its shortcuts), so a
reader never sees a half-written file; the journal is an append-only log
fsynced in batches.
"""
