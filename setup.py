"""Build of tsbench: the Python package plus the cffi-built C core (tsbench._native)."""

from setuptools import setup

setup(cffi_modules=["tsbench/_ffi_build.py:ffibuilder"])
