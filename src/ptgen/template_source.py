"""Where the project template comes from: a versioned git history in a local cache.

Copier versions a template only when its source is the root of a git repository or a
git bundle. ptgen's template lives in `templates/project` of ptgen's own repository, so
ptgen builds a *template-rooted* history and keeps it in a cache repository:

- one commit per release listed in `templates/releases.toml` (version = commit of ptgen's
  repository), tagged `vX.Y.Z`. At release time `python -m ptgen.template_source build`
  writes these commits to `templates/project.bundle`, which ships in the wheel, so an
  installed ptgen (or a shallow clone) needs no git history;
- one development commit on top when the template on disk differs from the last
  release, kept on a branch `dev/<sha>` so that projects generated from it stay updatable.

Commits are made with a fixed identity and fixed dates, so the same template state gives
the same commit hashes on every machine. The cache is `$PTGEN_CACHE_DIR/template`
(default: the user's cache directory); its path is recorded `~`-relative in a project's
`.copier-answers.yml`, so the answers file is the same on every machine.

Library use::

    ref = resolve_template()            # newest template; builds/refreshes the cache
    copier.run_copy(ref.src_path, dst, vcs_ref=ref.vcs_ref, data=answers, unsafe=True)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ptgen._toml import tomllib
from ptgen.errors import PtgenError
from ptgen.git import NEUTRAL_IDENTITY, GitError, git, git_ok, last_line
from ptgen.locking import exclusive_lock
from ptgen.paths import templates_dir

CACHE_ENV = "PTGEN_CACHE_DIR"
# Part of every cache key: bump it when the way histories are built changes.
_SCHEME = b"ptgen-template-history-2"
_DEV_DATE = "946684800 +0000"  # 2000-01-01: dev commits must not depend on the clock
_SKIPPED_NAMES = {"__pycache__", ".DS_Store"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}


class TemplateSourceError(PtgenError):
    """The template history cannot be built or read."""


class UnknownVersion(TemplateSourceError):
    """A template version that no release provides."""


@dataclass(frozen=True)
class TemplateRef:
    """A template version Copier can use: `run_copy(ref.src_path, dst, vcs_ref=ref.vcs_ref)`."""

    src_path: str  # the cache repository, `~`-relative when it is under the home directory
    vcs_ref: str | None  # a tag `vX.Y.Z`, or the full hash of the development commit
    version: str  # `X.Y.Z`, or `git describe` of the development commit without the `v`


@dataclass(frozen=True)
class TemplateSource:
    """A `templates/` directory: `project/` (the Copier template), releases, maybe a bundle."""

    root: Path

    @property
    def project_dir(self) -> Path:
        return self.root / "project"

    @property
    def releases_file(self) -> Path:
        return self.root / "releases.toml"

    @property
    def bundle(self) -> Path:
        return self.root / "project.bundle"

    def releases(self) -> list[tuple[str, str]]:
        """(version, commit) pairs from releases.toml, oldest version first."""
        if not self.releases_file.exists():
            return []
        table = _parse_releases(self.releases_file.read_text(encoding="utf-8"))
        from packaging.version import InvalidVersion, Version

        try:
            return sorted(table.items(), key=lambda item: Version(item[0]))
        except InvalidVersion as exc:
            raise TemplateSourceError(f"{self.releases_file}: {exc}") from None


@dataclass(frozen=True)
class History:
    """What the cache holds for one template state: releases and the newest ref."""

    versions: tuple[str, ...]
    latest_ref: str
    latest_version: str


def default_source() -> TemplateSource:
    """`$PTGEN_TEMPLATES_DIR`, else ptgen's templates/ (installed, or the source checkout)."""
    return TemplateSource(templates_dir())


def cache_dir() -> Path:
    """`$PTGEN_CACHE_DIR`, else the platform's user cache directory for ptgen."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().absolute()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ptgen", appauthor=False))


def cache_repo() -> Path:
    return cache_dir() / "template"


def portable_path(path: Path) -> str:
    """`~/...` for a path under the home directory, so every machine records the same text."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return path.as_posix()


def resolve_template(
    version: str | None = None, *, source: TemplateSource | None = None
) -> TemplateRef:
    """The template at `version` (default: the newest, unreleased changes included).

    Builds or refreshes the cache repository first, so the result is usable at once.
    """
    history = ensure_cache(source or default_source())
    src_path = portable_path(cache_repo())
    wanted = None if version is None else version.removeprefix("v")
    if wanted is None or wanted == history.latest_version:
        return TemplateRef(src_path, history.latest_ref, history.latest_version)
    if wanted not in history.versions:
        known = ", ".join(history.versions) or "none"
        raise UnknownVersion(f"unknown template version {version!r} (released: {known})")
    return TemplateRef(src_path, f"v{wanted}", wanted)


@contextlib.contextmanager
def reading_cache(ref: TemplateRef) -> Iterator[None]:
    """Around Copier: git failing to read the template cache becomes one clear error."""
    from plumbum import ProcessExecutionError  # comes with Copier

    try:
        yield
    except ProcessExecutionError as exc:
        raise TemplateSourceError(
            f"Copier could not read the template cache {ref.src_path} "
            f"(git: {last_line(exc.stderr)}); "
            "if it is damaged, delete that directory and run ptgen again to rebuild it"
        ) from None


def ensure_cache(source: TemplateSource) -> History:
    """Make the cache repository hold `source`'s history; cheap when it already does."""
    repo = cache_repo()
    key = _fingerprint(source)
    history = _usable_stamp(repo, key)
    if history is not None:
        return history
    repo.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(repo.parent / "template.lock"):
        history = _usable_stamp(repo, key)  # another process may have built it meanwhile
        if history is None:
            history = _refresh_cache(source, repo)
            _write_stamp(repo, key, history)
    return history


def _usable_stamp(repo: Path, key: str) -> History | None:
    """The history the stamp records, if the cache still holds its newest template."""
    history = _read_stamp(repo, key)
    if history is None or git_ok(repo, "cat-file", "-e", f"{history.latest_ref}^{{tree}}"):
        return history
    return None  # damaged since it was stamped (objects lost): refresh it


def _refresh_cache(source: TemplateSource, repo: Path) -> History:
    """Build the history next to the cache, then move it in (new) or fetch it (existing).

    A cache repository that git finds damaged is moved aside (`template.damaged-*`, for
    whoever wants to look into it) and replaced by the new build.
    """
    if (repo / ".git").is_dir() and not git_ok(
        repo, "fsck", "--connectivity-only", "--no-dangling", "--no-progress"
    ):
        os.replace(
            repo, repo.with_name(f"template.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        )
    with tempfile.TemporaryDirectory(dir=repo.parent, prefix="build-") as tmp:
        built = Path(tmp) / "template"
        history = build_history(source, built)
        if not (repo / ".git").is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            os.replace(built, repo)
        else:
            _fetch_history(repo, built, history)
    # Copier walks the .git of its clone of the cache: one pack beats hundreds of objects.
    git(repo, "repack", "-a", "-d", "-q")
    return history


def _fetch_history(repo: Path, built: Path, history: History) -> None:
    try:
        git(
            repo,
            "fetch",
            "-q",
            str(built),
            "refs/tags/*:refs/tags/*",
            "+refs/heads/dev/*:refs/heads/dev/*",
        )
    except GitError as exc:
        raise TemplateSourceError(
            f"the template cache {repo} holds a different release history ({exc}); "
            "delete that directory and retry"
        ) from None
    git(repo, "checkout", "-q", "-f", "-B", "main", history.latest_ref)


def build_history(source: TemplateSource, repo: Path) -> History:
    """Create at `repo` a template-rooted repository: release tags, then a dev commit."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    releases = source.releases()
    tip = _import_releases(source, repo, releases)
    dev = _commit_dev(source, repo, tip)
    versions = tuple(version for version, _ in releases)
    if dev is not None:
        git(repo, "branch", "-f", f"dev/{dev[:12]}", dev)
        git(repo, "checkout", "-q", "-f", "-B", "main", dev)
        if releases:
            git(repo, "tag", "-f", _dev_tag(source, releases[-1], dev), dev)
        described = git(repo, "describe", "--tags", "--always", dev).strip()
        return History(versions, dev, described.removeprefix("v"))
    if tip is None:
        raise TemplateSourceError(f"no template in {source.root} (no project/ and no releases)")
    git(repo, "checkout", "-q", "-f", "-B", "main", tip)
    return History(versions, f"v{versions[-1]}", versions[-1])


def _import_releases(
    source: TemplateSource, repo: Path, releases: list[tuple[str, str]]
) -> str | None:
    """Put every release into `repo` as a tag `vX.Y.Z`; return the newest release commit."""
    if not releases:
        return None
    if _bundle_covers(source.bundle, repo, releases):
        git(repo, "fetch", "-q", str(source.bundle), "refs/tags/*:refs/tags/*")
    else:
        _commit_releases(source, repo, releases)
    return git(repo, "rev-parse", f"v{releases[-1][0]}^{{commit}}").strip()


def _bundle_covers(bundle: Path, repo: Path, releases: list[tuple[str, str]]) -> bool:
    if not bundle.is_file():
        return False
    heads = git(repo, "bundle", "list-heads", str(bundle), check=False)
    tags = {line.split()[-1] for line in heads.splitlines() if line.strip()}
    return all(f"refs/tags/v{version}" in tags for version, _ in releases)


def _commit_releases(source: TemplateSource, repo: Path, releases: list[tuple[str, str]]) -> None:
    """One commit per release from ptgen's own git history (needs a full clone)."""
    top, prefix = _checkout_location(source)
    parent = None
    for version, commit in releases:
        if not git_ok(top, "cat-file", "-e", f"{commit}^{{commit}}"):
            raise TemplateSourceError(
                f"release {version}: commit {commit} is not in {top} "
                "(a shallow clone? run `git fetch --unshallow`)"
            )
        _clear_worktree(repo)
        _extract(top, f"{commit}:{prefix}", repo)
        date = git(top, "show", "-s", "--format=%ct", commit).strip() + " +0000"
        parent = _commit(repo, parent, f"ptgen project template {version}", date)
        git(repo, "tag", f"v{version}", parent)


def _commit_dev(source: TemplateSource, repo: Path, tip: str | None) -> str | None:
    """Commit the template on disk on top of `tip` when it differs; return the commit."""
    if not source.project_dir.is_dir():
        return None
    _clear_worktree(repo)
    for rel in template_files(source.project_dir):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source.project_dir / rel, repo / rel)
    tree = _stage(repo)
    if tip is not None and tree == git(repo, "rev-parse", f"{tip}^{{tree}}").strip():
        return None
    return _commit(repo, tip, "ptgen project template (unreleased)", _DEV_DATE)


def _dev_tag(source: TemplateSource, release: tuple[str, str], dev: str) -> str:
    """`vX.Y.Z.postN+gHASH` for the template on disk after release X.Y.Z: N counts the
    commits of ptgen's repository that changed the template since that release (plus one
    for uncommitted changes), so a newer template state is a higher version.

    Copier updates to the highest tag that is not a pre-release and refuses a
    "downgrade": with this tag a project made from the development template updates
    with plain `copier update` (the tag is its newest version), as one made from a
    release does. The hash keeps the tags of two states with the same N apart.
    """
    version, commit = release
    changes = max(_changes_since(source, commit) or 1, 1)
    return f"v{version}.post{changes}+g{dev[:7]}"


def _changes_since(source: TemplateSource, commit: str) -> int | None:
    """The commits of ptgen's repository that changed the template since `commit`, plus one
    for uncommitted changes; None outside a git checkout or where it lacks `commit`."""
    with contextlib.suppress(TemplateSourceError, GitError):
        top, prefix = _checkout_location(source)
        if git_ok(top, "cat-file", "-e", f"{commit}^{{commit}}"):
            count = git(top, "rev-list", "--count", f"{commit}..HEAD", "--", prefix).strip()
            dirty = git(top, "status", "--porcelain", "--", prefix).strip()
            return int(count) + bool(dirty)
    return None


def template_version(source: TemplateSource | None = None) -> str:
    """The version `ptgen new project` would generate from, found cheaply (`ptgen --version`):
    the cache's record of this template state where it has one (`X.Y.Z`, or a development
    version when the template on disk differs from the newest release); else the newest
    release of releases.toml, `X.Y.Z+dev` when ptgen's checkout changed the template since.
    Builds nothing: no history, no Copier."""
    source = source or default_source()
    with contextlib.suppress(OSError):
        history = _read_stamp(cache_repo(), _fingerprint(source))
        if history is not None:
            return history.latest_version
    releases = source.releases()
    if not releases:
        return "unreleased"
    version, commit = releases[-1]
    return version + ("+dev" if _changes_since(source, commit) else "")


def _stage(repo: Path) -> str:
    # --force: the template's own .gitignore must not hide template files.
    git(repo, "add", "--all", "--force", ".")
    return git(repo, "write-tree").strip()


def _commit(repo: Path, parent: str | None, message: str, date: str) -> str:
    """Commit the work tree with a fixed identity and date, so hashes are reproducible."""
    tree = _stage(repo)
    env = {**os.environ, **NEUTRAL_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    parents = ["-p", parent] if parent else []
    args = ["-c", "commit.gpgSign=false", "commit-tree", tree, *parents, "-m", message]
    return git(repo, *args, env=env).strip()


def _checkout_location(source: TemplateSource) -> tuple[Path, str]:
    """The git work tree holding `source`, and `project/`'s path inside it."""
    if not git_ok(source.root, "rev-parse", "--show-toplevel"):
        raise TemplateSourceError(
            f"{source.root} is not in a git checkout and {source.bundle.name} lacks "
            "some releases: run `python -m ptgen.template_source build` in a full clone"
        )
    top = Path(git(source.root, "rev-parse", "--show-toplevel").strip()).resolve()
    return top, (source.root.resolve().relative_to(top) / "project").as_posix()


def _extract(top: Path, treeish: str, dest: Path) -> None:
    proc = subprocess.run(["git", "archive", "--format=tar", treeish], cwd=top, capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git archive {treeish} failed: {proc.stderr.decode().strip()}")
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python < 3.10.12
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, **safe)


def _clear_worktree(repo: Path) -> None:
    for child in repo.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def template_files(project_dir: Path) -> list[Path]:
    """The template's files relative to `project_dir`, without caches and editor litter."""
    files = []
    for path in sorted(project_dir.rglob("*")):
        rel = path.relative_to(project_dir)
        if path.is_dir() or _SKIPPED_NAMES & set(rel.parts) or path.suffix in _SKIPPED_SUFFIXES:
            continue
        files.append(rel)
    return files


def _fingerprint(source: TemplateSource) -> str:
    """A key for everything the history is built from: releases, bundle, files on disk."""
    digest = hashlib.sha256(_SCHEME)
    for path in (source.releases_file, source.bundle):
        digest.update(path.read_bytes() if path.is_file() else b"-")
    if source.project_dir.is_dir():
        for rel in template_files(source.project_dir):
            digest.update(rel.as_posix().encode() + b"\0")
            digest.update((source.project_dir / rel).read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _stamp_path(repo: Path, key: str) -> Path:
    # Inside .git: deleting the cache repository deletes its stamps too.
    return repo / ".git" / "ptgen-stamps" / f"{key}.json"


def _read_stamp(repo: Path, key: str) -> History | None:
    try:
        data = json.loads(_stamp_path(repo, key).read_text(encoding="utf-8"))
        return History(tuple(data["versions"]), data["latest_ref"], data["latest_version"])
    except (OSError, ValueError, TypeError, KeyError):  # none yet, or damaged: rebuild
        return None


def _write_stamp(repo: Path, key: str, history: History) -> None:
    path = _stamp_path(repo, key)
    path.parent.mkdir(exist_ok=True)
    data = {"versions": list(history.versions), "latest_ref": history.latest_ref}
    data["latest_version"] = history.latest_version
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)  # readers never see half a stamp


def _parse_releases(text: str) -> dict[str, str]:
    """The `[releases]` table of releases.toml: `"X.Y.Z" = "commit"` lines."""
    try:
        return dict(tomllib.loads(text).get("releases", {}))
    except tomllib.TOMLDecodeError as exc:
        raise TemplateSourceError(f"releases.toml: {exc}") from None


def build_bundle(source: TemplateSource | None = None, output: Path | None = None) -> Path:
    """Release step: write every release of releases.toml to the bundle shipped in the wheel."""
    source = source or default_source()
    releases = source.releases()
    if not releases:
        raise TemplateSourceError(f"{source.releases_file} lists no release: nothing to bundle")
    output = output or source.bundle
    with tempfile.TemporaryDirectory(prefix="ptgen-bundle-") as tmp:
        repo = Path(tmp) / "template"
        repo.mkdir()
        git(repo, "init", "-q")
        _commit_releases(source, repo, releases)
        git(repo, "bundle", "create", "-q", str(Path(tmp) / "out.bundle"), "--tags")
        shutil.copyfile(Path(tmp) / "out.bundle", output)
    return output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ptgen.template_source")
    parser.add_argument("command", choices=["build"], help="build: write templates/project.bundle")
    parser.add_argument("--templates", type=Path, help="templates directory (default: ptgen's)")
    parser.add_argument(
        "--output", type=Path, help="bundle path (default: templates/project.bundle)"
    )
    args = parser.parse_args(argv)
    source = TemplateSource(args.templates) if args.templates else default_source()
    try:
        path = build_bundle(source, args.output)
    except PtgenError as exc:
        parser.exit(1, f"error: {exc}\n")
    print(f"wrote {path} ({', '.join(v for v, _ in source.releases())})")


if __name__ == "__main__":
    main()
