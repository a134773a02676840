"""Journals a tracked program left behind: their reports, built after it ended."""

from .left import list_journals as list_journals
from .left import recover as recover
from .left import report_of_journal as report_of_journal
from .left import running as running
