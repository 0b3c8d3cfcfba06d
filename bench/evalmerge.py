#!/usr/bin/env python3
"""Evaluation + merge alone, as a whole process: import syslua, evaluate CONFIG, merge.

usage: evalmerge.py CONFIG    (prints the item count and manifest digest)
"""

import gc
import sys
from pathlib import Path

from syslua.cli import GC_THRESHOLD
from syslua.manifest.resolve import resolve

gc.set_threshold(*GC_THRESHOLD)  # as the `sys` command does

manifest = resolve(Path(sys.argv[1]))
print(len(manifest), manifest.digest)
