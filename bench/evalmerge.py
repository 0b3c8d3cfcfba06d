#!/usr/bin/env python3
"""Evaluation + merge alone, as a whole process: import syslua, evaluate CONFIG, merge.

usage: evalmerge.py CONFIG    (prints the item count and manifest digest)
"""

import sys

from syslua.manifest.resolve import resolve

manifest = resolve(sys.argv[1])
print(len(manifest), manifest.digest)
