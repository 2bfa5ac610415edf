"""One error hierarchy: every error a user can act on is a PtgenError."""

from __future__ import annotations


class PtgenError(Exception):
    """An error the user can fix; the CLI prints its message as one line and exits 1."""


class InvalidName(PtgenError):
    """A project or component name that cannot be used."""


class ConflictError(PtgenError):
    """Files that exist already and would be overwritten without --force."""


class NotAProject(PtgenError):
    """A directory that is not a ptgen-generated project."""


class SmokeFailed(PtgenError):
    """The generated project's smoke run failed at a stage."""
