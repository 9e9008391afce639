#!/usr/bin/env python3
"""Regenerate the seed corpora in fuzz/corpus/<target>/ from the test
fixtures and examples (run from anywhere; needs the `zstd` command).

Seeds are small valid inputs plus a few hostile ones the loaders must
refuse; libFuzzer mutates from there. `ci/fuzz.sh` never writes here: new
inputs it finds go to a scratch directory.
"""
import io
import os
import pathlib
import shutil
import subprocess
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"


def out(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def reset(target):
    shutil.rmtree(CORPUS / target, ignore_errors=True)


def agent_dirs():
    for base in (EXAMPLES, FIXTURES / "run", FIXTURES / "agent_toml"):
        for d in sorted(base.iterdir()):
            if d.is_dir():
                yield d


def files_of(d):
    return sorted(p for p in d.rglob("*") if p.is_file() and not p.is_symlink())


# -- zotfile: manifest.json of every zotfile agent, plus edge cases ---------
reset("zotfile")
for d in agent_dirs():
    m = d / "manifest.json"
    if m.is_file():
        out("zotfile", d.name, m.read_bytes())
out("zotfile", "full", b"""{"zotfile": 1, "name": "full", "version": "1.0.0",
 "description": "d", "license": "MIT", "runtime": {"min_zot": "0.1.0"},
 "model": {"requires": ["tools", "vision"], "min_context": 8000, "preferred": ["a/b"]},
 "permissions": {"fs": {"read": ["${workspace}", "${agent_data}/x"], "write": ["${workspace}/out"]},
  "bash": {"mode": "allowlist", "allow": ["git", "ls"]}, "net": {"allow": []}, "env": {"read": []}},
 "requirements": {"os": ["linux"], "bin": ["git"]},
 "entry": {"pre": "p", "default_prompt": "go", "greeting": "hi"},
 "replace_system_prompt": false, "unknown": 1}""")
out("zotfile", "dup-key", b'{"zotfile": 1, "name": "a", "name": "b"}')
out("zotfile", "deep", b"[" * 200 + b"]" * 200)

# -- agent_toml: first byte picks the format (0 toml 1 yaml 2 json 3 md 4 SKILL.md)
reset("agent_toml")
SEL = {".toml": 0, ".yaml": 1, ".yml": 1, ".json": 2, ".md": 3}
for d in agent_dirs():
    for p in files_of(d):
        if p.name.startswith("agent.") and p.suffix in SEL:
            out("agent_toml", f"{d.name}-{p.name}", bytes([SEL[p.suffix]]) + p.read_bytes())
        elif p.name == "SKILL.md":
            out("agent_toml", f"{d.name}-{p.parent.name}-SKILL.md", b"\x04" + p.read_bytes())

# -- agent_zip: each agent.toml package zipped ------------------------------
reset("agent_zip")


def zinfo(name):
    # Fixed timestamps: the same fixtures give the same bytes.
    i = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    i.compress_type = zipfile.ZIP_DEFLATED
    return i


for d in agent_dirs():
    if not any((d / n).is_file() for n in ("agent.toml", "agent.yaml", "agent.json", "agent.md")):
        continue
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files_of(d):
            z.writestr(zinfo(p.relative_to(d).as_posix()), p.read_bytes())
    out("agent_zip", d.name + ".zip", buf.getvalue())
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr(zinfo("agent.toml"), 'name = "x"\n')
    z.writestr(zinfo("../escape.md"), "x")
out("agent_zip", "escape.zip", buf.getvalue())

# -- archive: zotfile agents as zstd and gzip tars, and hostile tars --------
reset("archive")


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def entry(name, data=b"", kind=tarfile.REGTYPE, mode=0o644, link=""):
    i = tarfile.TarInfo(name)
    i.type = kind
    i.mode = mode
    i.linkname = link
    i.size = len(data) if kind == tarfile.REGTYPE else 0
    return (i, data if kind == tarfile.REGTYPE else None)


def zstd(data):
    return subprocess.run(["zstd", "-q", "-3", "-c"], input=data, check=True,
                          capture_output=True).stdout


def gzip_(data):
    import gzip
    return gzip.compress(data, mtime=0)


for d in agent_dirs():
    if not (d / "manifest.json").is_file():
        continue
    members = [entry(p.relative_to(d).as_posix(), p.read_bytes()) for p in files_of(d)]
    raw = tar_bytes(members)
    out("archive", d.name + ".zot", zstd(raw))
    out("archive", d.name + ".tar.gz", gzip_(raw))
M = b'{"zotfile": 1, "name": "x"}'
hostile = {
    "dotdot": [entry("manifest.json", M), entry("../x", b"x")],
    "absolute": [entry("manifest.json", M), entry("/tmp/x", b"x")],
    "symlink": [entry("manifest.json", M), entry("l", kind=tarfile.SYMTYPE, link="/etc/passwd")],
    "hardlink": [entry("manifest.json", M), entry("h", kind=tarfile.LNKTYPE, link="manifest.json")],
    "duplicate": [entry("manifest.json", M), entry("manifest.json", M)],
    "file-dir": [entry("manifest.json", M), entry("a", b"x"), entry("a/b", b"y")],
    "dir": [entry("manifest.json", M), entry("d/", kind=tarfile.DIRTYPE, mode=0o755), entry("d/f", b"y", mode=0o755)],
}
for name, members in hostile.items():
    out("archive", name + ".zot", zstd(tar_bytes(members)))

# -- minisign: 0 signature, 1 public key, 2 secret key, 3 trusted comment ----
reset("minisign")
SEEDS = ROOT / "fuzz" / "minisign-seeds"
for p in sorted(SEEDS.iterdir()):
    sel = {"sig": 0, "pub": 1, "key": 2, "comment": 3}[p.name.rsplit("-", 1)[1]]
    out("minisign", p.name, bytes([sel]) + p.read_bytes())

for t in sorted(CORPUS.iterdir()):
    print(f"{t.name}: {len(list(t.iterdir()))} seeds")
