"""The OpInfo correctness sweep (harness.py, sweep.py) and its CI slice (test_opinfo_slice.py).

A package so that pytest imports this directory's conftest as `opinfo.conftest`: as a bare
`conftest` module it would shadow tests/python/conftest.py, whose helpers the tests there import
with `from conftest import ...`, whenever both directories run in one pytest session.
"""
