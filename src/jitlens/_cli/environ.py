"""The environment variables ``jitlens run`` and ``JITLENS=1`` use to reach the program's interpreter.

Kept apart so that ``jitlens run`` (which only sets them) does not import
:mod:`.autostart` (which arms jitlens when imported).
"""

#: Set in the environment by the tracked program; its children see another pid.
MAIN_PID = "JITLENS_MAIN_PID"
#: ``1``: the tracked program's Python children are tracked too.
CHILDREN = "JITLENS_CHILDREN"
#: ``jitlens run``'s options (JSON), set by the command before it becomes the program.
RUN = "JITLENS_RUN"
#: The pid whose program image armed jitlens last: the same pid again means an ``exec``.
IMAGE = "JITLENS_IMAGE"
#: Where the bootstrap ``sitecustomize`` finds jitlens (when its .pth is not processed).
BOOTSTRAP = "JITLENS_BOOTSTRAP"
