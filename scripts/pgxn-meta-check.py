#!/usr/bin/env python3
"""pgxn-meta-check.py - check a META.json against PGXN's META spec 1.0.0
(https://pgxn.org/spec/), as PGXN Manager does on upload: the required keys,
the types and values each key allows, semantic versions (SemVer 1.0.0), the
license names, prereqs by phase and relation, release_status, no unknown
key (custom keys start with x_ or X_).  scripts/make-dist.sh runs it; with
--name and --version it also checks that the file describes this tree.

Usage: pgxn-meta-check.py META.json [--name NAME] [--version VERSION]
Prints each problem and exits 1 if there is one.
"""
import argparse
import json
import re
import sys

SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([a-zA-Z][a-zA-Z0-9-]*)?$")
# A prereq's version: 0, a version, or a comma-separated list of ranges.
RANGE = re.compile(r"^\s*(==|!=|>=|<=|>|<)?\s*" + SEMVER.pattern[1:-1] + r"\s*$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
TOP = {
    "abstract", "license", "maintainer", "meta-spec", "name", "provides", "version",
    "description", "generated_by", "no_index", "prereqs", "release_status", "resources", "tags",
}
REQUIRED = {"abstract", "license", "maintainer", "meta-spec", "name", "provides", "version"}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
problems = []


def bad(path, msg):
    problems.append(f"{path}: {msg}")


def custom(key):
    return key.startswith(("x_", "X_"))


def string(path, v, empty_ok=False):
    if not isinstance(v, str) or (not empty_ok and not v.strip()):
        bad(path, "must be a non-empty string")
        return False
    return True


def semver(path, v):
    if string(path, v) and not SEMVER.match(v):
        bad(path, f"{v!r} is not a semantic version (MAJOR.MINOR.PATCH)")


def keys(path, obj, allowed):
    for k in obj:
        if k not in allowed and not custom(k):
            bad(f"{path}.{k}", "unknown key")


def check(meta):
    if not isinstance(meta, dict):
        bad("META", "must be a JSON object")
        return
    for k in sorted(REQUIRED - meta.keys()):
        bad(k, "required key missing")
    keys("META", meta, TOP)
    if "name" in meta and string("name", meta["name"]):
        if len(meta["name"]) < 2 or re.search(r"[\s/\\:]", meta["name"]):
            bad("name", "at least two characters, no whitespace, '/', '\\' or ':'")
    if "version" in meta:
        semver("version", meta["version"])
    if "abstract" in meta:
        string("abstract", meta["abstract"])
    if "description" in meta:
        string("description", meta["description"])
    if "generated_by" in meta:
        string("generated_by", meta["generated_by"])
    m = meta.get("maintainer")
    if m is not None:
        if isinstance(m, list):
            if not m:
                bad("maintainer", "empty list")
            for i, x in enumerate(m):
                string(f"maintainer[{i}]", x)
        else:
            string("maintainer", m)
    lic = meta.get("license")
    if lic is not None:
        if isinstance(lic, str):
            if lic not in LICENSES:
                bad("license", f"{lic!r} is not one of the spec's license names")
        elif isinstance(lic, list):
            for i, x in enumerate(lic):
                if x not in LICENSES:
                    bad(f"license[{i}]", f"{x!r} is not one of the spec's license names")
        elif isinstance(lic, dict):
            for k, v in lic.items():
                string(f"license.{k}", v)
        else:
            bad("license", "must be a string, a list or an object")
    ms = meta.get("meta-spec")
    if ms is not None:
        if not isinstance(ms, dict):
            bad("meta-spec", "must be an object")
        else:
            keys("meta-spec", ms, {"version", "url"})
            if ms.get("version") != "1.0.0":
                bad("meta-spec.version", "must be 1.0.0")
    prov = meta.get("provides")
    if prov is not None:
        if not isinstance(prov, dict) or not prov:
            bad("provides", "must be a non-empty object")
        else:
            for ext, p in prov.items():
                path = f"provides.{ext}"
                if not isinstance(p, dict):
                    bad(path, "must be an object")
                    continue
                keys(path, p, {"file", "version", "abstract", "docfile"})
                for k in ("file", "version"):
                    if k not in p:
                        bad(f"{path}.{k}", "required key missing")
                if "version" in p:
                    semver(f"{path}.version", p["version"])
                for k in ("file", "abstract", "docfile"):
                    if k in p:
                        string(f"{path}.{k}", p[k])
    pr = meta.get("prereqs")
    if pr is not None:
        if not isinstance(pr, dict):
            bad("prereqs", "must be an object")
        else:
            for phase, rels in pr.items():
                if phase not in PHASES and not custom(phase):
                    bad(f"prereqs.{phase}", "unknown phase")
                if not isinstance(rels, dict):
                    bad(f"prereqs.{phase}", "must be an object")
                    continue
                for rel, deps in rels.items():
                    path = f"prereqs.{phase}.{rel}"
                    if rel not in RELATIONS and not custom(rel):
                        bad(path, "unknown relation")
                    if not isinstance(deps, dict):
                        bad(path, "must be an object")
                        continue
                    for dep, ver in deps.items():
                        if isinstance(ver, int) and ver == 0:
                            continue
                        if not isinstance(ver, str) or not (
                                ver == "0" or all(RANGE.match(r) for r in ver.split(","))):
                            bad(f"{path}.{dep}", f"{ver!r} is not a version or version range")
    rs = meta.get("release_status")
    if rs is not None and rs not in ("stable", "testing", "unstable"):
        bad("release_status", "must be stable, testing or unstable")
    tags = meta.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not tags:
            bad("tags", "must be a non-empty list")
        else:
            for i, t in enumerate(tags):
                if string(f"tags[{i}]", t) and len(t) > 255:
                    bad(f"tags[{i}]", "longer than 255 characters")
    ni = meta.get("no_index")
    if ni is not None:
        if not isinstance(ni, dict):
            bad("no_index", "must be an object")
        else:
            keys("no_index", ni, {"file", "directory"})
            for k, v in ni.items():
                vs = v if isinstance(v, list) else [v]
                for i, x in enumerate(vs):
                    string(f"no_index.{k}[{i}]", x)
    res = meta.get("resources")
    if res is not None:
        if not isinstance(res, dict):
            bad("resources", "must be an object")
        else:
            keys("resources", res, {"homepage", "bugtracker", "repository"})
            if "homepage" in res:
                string("resources.homepage", res["homepage"])
            for k, allowed in (("bugtracker", {"web", "mailto"}), ("repository", {"url", "web", "type"})):
                if k in res:
                    if not isinstance(res[k], dict) or not res[k]:
                        bad(f"resources.{k}", "must be a non-empty object")
                    else:
                        keys(f"resources.{k}", res[k], allowed)
                        for kk, vv in res[k].items():
                            string(f"resources.{k}.{kk}", vv)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("meta")
    ap.add_argument("--name")
    ap.add_argument("--version")
    a = ap.parse_args()
    try:
        with open(a.meta, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.meta}: {e}", file=sys.stderr)
        return 1
    check(meta)
    if isinstance(meta, dict):
        if a.name and meta.get("name") != a.name:
            bad("name", f"{meta.get('name')!r}, but this is {a.name!r}")
        if a.version:
            if meta.get("version") != a.version:
                bad("version", f"{meta.get('version')!r}, but the control file says {a.version!r}")
            for ext, p in (meta.get("provides") or {}).items():
                if isinstance(p, dict) and ext == a.name and p.get("version") != a.version:
                    bad(f"provides.{ext}.version", f"{p.get('version')!r}, but the control file says {a.version!r}")
    for p in problems:
        print(f"{a.meta}: {p}", file=sys.stderr)
    if not problems:
        print(f"{a.meta}: valid (PGXN META spec 1.0.0)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
