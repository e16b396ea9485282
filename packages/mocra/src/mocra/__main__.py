"""Run the `mocra` CLI as `python -m mocra`."""

from mocra._cli import main

raise SystemExit(main())
