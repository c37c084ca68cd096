#!/usr/bin/env python3
"""Downloads the GPU benchmark's peer, FlashInfer's source release, into .peers/ (git ignores it).

    python tools/fetch_gpu_peers.py            # then: device run with carry [".peers"]

The GPU host has PyTorch and nvcc but no package registry, so the peer travels with the working
tree. FlashInfer 0.3.1's source release (3.8 MB) is the newest small one whose kernels build with
CUDA 13 (0.2.x still calls CUB's removed ``cub::Max``); it compiles its sampling kernels on first
use (tests/gpu/run_gpu_perf.sh times that apart). Needs only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urljoin

PACKAGE, VERSION = "flashinfer-python", "0.3.1"
PEERS = Path(__file__).resolve().parent.parent / ".peers"


def main() -> int:
    index = f"https://pypi.org/pypi/{PACKAGE}/json"
    with urllib.request.urlopen(index, timeout=60) as response:
        files = json.load(response)["releases"][VERSION]
    sdist = next(f for f in files if f["packagetype"] == "sdist")
    target = PEERS / sdist["filename"]
    if not target.exists():
        PEERS.mkdir(exist_ok=True)
        with urllib.request.urlopen(urljoin(index, sdist["url"]), timeout=300) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
            print(f"fetch_gpu_peers: {sdist['filename']}: checksum mismatch", file=sys.stderr)
            return 1
        target.write_bytes(data)
    print(f"{target} ({target.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
