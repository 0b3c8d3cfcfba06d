"""Persistent state: the content-addressed store, snapshots, the journal and the lock.

Everything here is written through `fsutil.atomic_write` or the store's own
temp + rename, so a reader never sees a half-written file.
"""
