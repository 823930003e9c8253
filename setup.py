"""Build of tsbench: the Python package plus the cffi-built C core (tsbench.data._native)."""

from setuptools import setup

setup(cffi_modules=["tsbench/data/_ffi_build.py:ffibuilder"])
