"""Prints the history rows of offline wandb runs (``run-*.wandb`` files) as JSON lines, one row per ``wandb.log``.

Run it with the python of a venv that has wandb (AMAGO's reference venv for AMAGO's runs): it is a separate
program, so that the project never imports AMAGO's environment. wandb 0.31 dropped its Python reader of these files
(``wandb.sdk.internal.datastore``): its core service writes them. The format is unchanged: a 7-byte header
(``:W&B``, magic 0xBEE1, version 0), then LevelDB-log records in 32 KiB blocks (7-byte record header: CRC32, length,
type FULL/FIRST/MIDDLE/LAST; a block tail shorter than a header is padding), each record one serialized
``wandb.proto.wandb_internal_pb2.Record``. A file cut short (a run stopped mid-write) ends at its last whole record.

Usage: PYTHON bench/wandb_offline_history.py RUN.wandb [RUN.wandb ...]
Output: one JSON object per history row, ``{"file": ..., "row": {key: value}}``; ``--keys`` prints the key names.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

HEADER = struct.Struct("<4sHB")  # ident, magic, version
RECORD = struct.Struct("<IHB")  # checksum, length, type
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[bytes]:
    """The payloads of one ``.wandb`` file, reassembled across blocks; stops at a truncated or corrupt record."""
    data = path.read_bytes()
    if len(data) < HEADER.size:
        return
    ident, magic, version = HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1 or version != 0:
        msg = f"{path}: not a wandb transaction log (header {ident!r} {magic:#x} v{version}); is it a run-*.wandb file?"
        raise SystemExit(msg)
    pos, pending = HEADER.size, b""
    while pos + RECORD.size <= len(data):
        room = BLOCK - pos % BLOCK
        if room < RECORD.size:
            pos += room  # block padding
            continue
        checksum, length, kind = RECORD.unpack_from(data, pos)
        start = pos + RECORD.size
        payload = data[start : start + length]
        if kind == 0 and length == 0:
            pos += room  # zero padding up to the next block (a file preallocated or cut mid-block)
            continue
        if len(payload) < length or zlib.crc32(payload, zlib.crc32(bytes([kind]))) != checksum:
            return  # the tail of a run stopped mid-write
        pos = start + length
        if kind == FULL:
            yield payload
        elif kind == FIRST:
            pending = payload
        elif kind == MIDDLE:
            pending += payload
        elif kind == LAST:
            yield pending + payload
            pending = b""


def history(path: Path) -> Iterator[dict]:
    """The history rows (``wandb.log`` calls) of one file, values decoded from their JSON."""
    from wandb.proto import wandb_internal_pb2 as pb  # the venv that runs this script

    for payload in records(path):
        record = pb.Record()
        record.ParseFromString(payload)
        if record.WhichOneof("record_type") != "history":
            continue
        row = {}
        for item in record.history.item:
            key = item.key or "/".join(item.nested_key)
            row[key] = json.loads(item.value_json)
        yield row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--keys", action="store_true", help="print the sorted key names of all rows instead")
    args = parser.parse_args()
    keys: set[str] = set()
    for path in args.files:
        for row in history(path):
            if args.keys:
                keys |= row.keys()
            else:
                sys.stdout.write(json.dumps({"file": str(path), "row": row}) + "\n")
    if args.keys:
        sys.stdout.write("\n".join(sorted(keys)) + "\n")


if __name__ == "__main__":
    main()
