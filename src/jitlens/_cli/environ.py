"""What ``jitlens run`` and the program it runs share: the environment variables that reach the
program's interpreter, and the words and limits of the exit summary either may write.

Kept apart so that ``jitlens run`` does not import :mod:`.autostart` (which arms jitlens
when imported).
"""

#: Set in the environment by the tracked program; its children see another pid.
MAIN_PID = "JITLENS_MAIN_PID"
#: ``1``: the tracked program's Python children are tracked too.
CHILDREN = "JITLENS_CHILDREN"
#: ``jitlens run``'s options (JSON), set by the command before it becomes the program.
RUN = "JITLENS_RUN"
#: The pid whose program image armed jitlens last: the same pid again means an ``exec``.
IMAGE = "JITLENS_IMAGE"

#: The exit summary stays under 60 lines for any program (all of it: --json / --html).
EXIT_LINES = 56
INTERRUPTED = "jitlens: interrupted (Ctrl-C) while writing the report; the rest was not written\n"
