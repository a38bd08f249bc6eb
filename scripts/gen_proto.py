#!/usr/bin/env python3
"""Generate the Python protocol code under ``sdk/protocol/`` from ``protos/``.

    python scripts/gen_proto.py            # regenerate in place
    python scripts/gen_proto.py --out DIR  # generate into DIR (the staleness test uses this)

Runs ``grpc_tools.protoc`` (messages, gRPC stubs and, when mypy-protobuf is installed, the
``.pyi`` stubs), then rewrites protoc's top-level imports (``from tonk.v1 import ...``) to
``sdk.protocol.tonk.v1`` so the code is importable from inside the ``sdk`` package. The
output depends only on the .proto files and the tool versions, so running it twice gives
the same bytes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
OUT_DEFAULT = ROOT / "sdk" / "protocol"
PACKAGE = "sdk.protocol"
# Only this tree is generated; sdk/protocol/__init__.py is hand-written and never touched.
GENERATED_TOP = "tonk"


class GenerateError(RuntimeError):
    """protoc failed or a plugin is missing."""


def proto_files() -> list[Path]:
    return sorted(PROTO_ROOT.rglob("*.proto"))


def _plugin(name: str) -> str | None:
    # The plugin sits next to the running interpreter in a virtualenv; else look on PATH.
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def _fix_imports(text: str) -> str:
    # protoc writes imports relative to the proto root (`from tonk.v1 import bot_pb2`);
    # ours live under sdk.protocol.
    text = re.sub(rf"^from {GENERATED_TOP}(\.[\w.]+)? import ", _rewrite_from, text, flags=re.M)
    return re.sub(rf"^import {GENERATED_TOP}\.", f"import {PACKAGE}.{GENERATED_TOP}.", text, flags=re.M)


def _rewrite_from(match: re.Match[str]) -> str:
    return f"from {PACKAGE}.{GENERATED_TOP}{match.group(1) or ''} import "


def generate(out: Path, *, stubs: bool = True) -> list[Path]:
    """Generate into ``out`` (``out/tonk/...``); return the files written, sorted."""
    from grpc_tools import protoc  # a dev dependency: imported only when generating

    files = proto_files()
    if not files:
        raise GenerateError(f"no .proto files under {PROTO_ROOT}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"--python_out={tmp}",
            f"--grpc_python_out={tmp}",
        ]
        mypy_plugin, mypy_grpc_plugin = _plugin("protoc-gen-mypy"), _plugin("protoc-gen-mypy_grpc")
        if stubs and mypy_plugin and mypy_grpc_plugin:
            args += [
                f"--plugin=protoc-gen-mypy={mypy_plugin}",
                f"--plugin=protoc-gen-mypy_grpc={mypy_grpc_plugin}",
                f"--mypy_out={tmp}",
                f"--mypy_grpc_out={tmp}",
            ]
        elif stubs:
            print("gen_proto: mypy-protobuf not installed; skipping the .pyi stubs", file=sys.stderr)
        args += [str(f.relative_to(PROTO_ROOT)) for f in files]
        if protoc.main(args) != 0:
            raise GenerateError("protoc failed (see the messages above)")
        generated = sorted(p for p in tmp.rglob("*") if p.is_file())
        # Namespace packages would also work, but explicit ones keep setuptools and mypy simple.
        package_dirs = {d for p in generated for d in p.relative_to(tmp).parents if d != Path(".")}
        for package_dir in package_dirs:
            init = tmp / package_dir / "__init__.py"
            if not init.exists():
                init.write_text("")
                generated.append(init)
        target = out / GENERATED_TOP
        if target.exists():
            shutil.rmtree(target)
        written = []
        for path in sorted(generated):
            rel = path.relative_to(tmp)
            dest = out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            text = _fix_imports(path.read_text())
            if dest.suffix == ".pyi":
                # Generated stubs are consumed, not maintained: their own findings (unused
                # ignores where grpc has no stubs) are not ours to fix; their types still count.
                text = "# mypy: ignore-errors\n" + text
            dest.write_text(text)
            written.append(dest)
    return sorted(written)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT_DEFAULT, help="output package dir")
    parser.add_argument("--no-stubs", action="store_true", help="skip the mypy .pyi stubs")
    args = parser.parse_args(argv)
    try:
        written = generate(args.out, stubs=not args.no_stubs)
    except GenerateError as exc:
        print(f"gen_proto: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path.relative_to(args.out.resolve()) if path.is_relative_to(args.out.resolve()) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
