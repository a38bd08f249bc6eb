"""What checking an uploaded archive costs (arena/bots/uploads.py), against reading the same
archive with the standard library in the same run (the machine's own speed):

- a project of many small files (the shape of a vendored node_modules): the streamed check
  against ``tarfile`` listing the members;
- a zip bomb: the check refuses it at its member's header, against merely decompressing it.

    .venv/bin/python bench/uploads.py [--files 2000] [--bomb-mib 1024]

Prints the median times and their ratios to the baselines.
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import statistics
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and bench/arena.py would shadow
# the ``arena`` package: put the repository root there instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from arena.bots.uploads import UnpackedTooLargeError, inspect_archive  # noqa: E402
from arena.config import Settings  # noqa: E402

MANIFEST = b'[bot]\ncommand = ["node", "bot.js", "--socket", "{socket}"]\n'


def project(files: int) -> bytes:
    rng = random.Random(1)
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for i in range(files):
            data = MANIFEST if i == 0 else rng.randbytes(rng.randrange(200, 4000))
            info = tarfile.TarInfo("tonk.toml" if i == 0 else f"node_modules/pkg{i % 50}/lib/file{i}.js")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def bomb(mib: int) -> bytes:
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = mib << 20
        chunk = bytes(1 << 20)

        class Zeros(io.RawIOBase):
            left = info.size

            def readable(self) -> bool:
                return True

            def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
                n = min(len(buffer), self.left, len(chunk))
                buffer[:n] = chunk[:n]
                self.left -= n
                return n

        tar.addfile(info, Zeros())
    return raw.getvalue()


def median(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--bomb-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    settings = Settings(upload_max_files=args.files + 1)

    archive = project(args.files)

    def list_members() -> None:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.getmembers()

    listing = median(list_members, args.runs)
    checked = median(lambda: inspect_archive(archive, settings), args.runs)
    print(f"project: {args.files} files, {len(archive)} bytes")
    print(f"  tarfile listing (baseline)  {listing * 1000:8.1f} ms")
    print(f"  the arena's check           {checked * 1000:8.1f} ms   x{checked / listing:.2f}")

    packed = bomb(args.bomb_mib)

    def refuse() -> None:
        try:
            inspect_archive(packed, Settings())
        except UnpackedTooLargeError:
            return
        raise AssertionError("the bomb was not refused")

    def decompress() -> None:
        with gzip.GzipFile(fileobj=io.BytesIO(packed)) as gz:
            while gz.read(1 << 20):
                pass

    inflating = median(decompress, 1)
    refused = median(refuse, args.runs)
    print(f"bomb: {args.bomb_mib} MiB of zeros in {len(packed)} bytes")
    print(f"  decompressing it (baseline) {inflating * 1000:8.1f} ms")
    print(f"  the arena's refusal         {refused * 1000:8.1f} ms   x{refused / inflating:.4f}")


if __name__ == "__main__":
    main()
