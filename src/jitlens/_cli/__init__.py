"""The command line (``main(argv) -> int``), ``jitlens run`` and the ``JITLENS=1`` start-up hook."""
