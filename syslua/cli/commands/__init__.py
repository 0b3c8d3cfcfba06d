"""One module per `sys` command; each exposes `run(term, ...) -> exit code`
(`snapshot` has one such function per subcommand: `show`, `tag`, `delete`)."""
