"""`verify`: check a release bundle (folder, .tar.gz or .zip) against its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchforge_harness.bundle import read_manifest, verify
from benchforge_harness.commands import common
from benchforge_harness.io import InputError

NAME = "verify"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="check a release bundle against its manifest (sha256 of every file)",
        description="Check that every file a bundle's manifest.json lists is present with the same sha256, and that "
        "nothing unlisted was added. PATH is a release folder, or its .tar.gz or .zip archive.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", nargs="?", default=".", metavar="PATH", help="bundle folder or archive (default: .)")
    parser.set_defaults(run=run)


def run(args) -> int:
    path = Path(args.path)
    if not path.exists():
        raise InputError(f"{path}: not found")
    problems = verify(path)
    if problems:
        common.say(f"verify: {path} does NOT match its manifest ({len(problems)} problem(s)):")
        for problem in problems[:50]:
            common.say(f"  {problem}")
        return 1
    manifest = read_manifest(path)
    common.say(
        f"verify: {path} is intact: {len(manifest['files'])} files match manifest.json "
        f"({manifest.get('name', '?')} {manifest.get('version', '')})."
    )
    return 0
