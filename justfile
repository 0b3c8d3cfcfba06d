# Development recipes (https://github.com/casey/just; `pip install rust-just`).

# Run the test suite, as CI does.
test *args:
    python -m pytest -q {{args}}

# Lint and type-check, as CI does (mypy's files are in pyproject.toml).
lint:
    ruff check syslua tests bench
    ruff format --check syslua tests bench
    mypy

# Benchmarks against the reference workload and the floor (see bench/README.md).
bench *args:
    python bench/run.py {{args}}
