"""One module per `sys` command; each exposes `run(term, ...) -> exit code`."""
