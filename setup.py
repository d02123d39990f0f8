"""Builds the phonegpt Python package with the project's CMake: libphonegpt (shared) and the
pybind11 module, both placed in the package so that it needs nothing outside itself
(the module finds libphonegpt_coordinator.so.0 through RPATH $ORIGIN).

    pip install -v --no-build-isolation .   # offline: the installed setuptools; -v: CMake's progress

Environment: PG_BUILD_JOBS (default 2) parallel jobs; CMAKE_ARGS extra CMake arguments.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def library_version():
    """The version in the public header (one place for it)."""
    with open(os.path.join(ROOT, "include", "phonegpt", "phonegpt.h"), encoding="utf-8") as f:
        header = f.read()
    parts = [re.search(r"#define PG_VERSION_%s (\d+)" % k, header).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        package_dir = os.path.dirname(target)
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DPython_EXECUTABLE=" + sys.executable,
            "-DPG_BUILD_PYTHON=ON", "-DPG_PYTHON_PACKAGE=ON",
            "-DPG_BUILD_TESTS=OFF", "-DPG_BUILD_EXAMPLES=OFF", "-DPG_BUILD_BENCHMARKS=OFF",
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_phonegpt", "phonegpt",
                               "-j", os.environ.get("PG_BUILD_JOBS", "2")])
        os.makedirs(package_dir, exist_ok=True)
        built = glob.glob(os.path.join(build_dir, "bindings", "python", "phonegpt", "_phonegpt*.so"))
        if len(built) != 1:
            raise RuntimeError("expected one built module, found %r" % built)
        shutil.copyfile(built[0], target)
        # the shared libraries under their SONAMEs: the module asks for the coordinator's (both
        # tiers); libphonegpt is what benchmarks/compare_pytorch.py calls through ctypes
        for name in ("libphonegpt_coordinator.so", "libphonegpt.so"):
            lib = os.path.realpath(os.path.join(build_dir, "lib", name))
            shutil.copyfile(lib, os.path.join(package_dir, "%s.%s" % (name, library_version().split(".")[0])))


setup(
    version=library_version(),
    packages=["phonegpt"],
    package_dir={"phonegpt": "bindings/python/phonegpt"},
    package_data={"phonegpt": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("phonegpt._phonegpt")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    # not ./build, which is the usual CMake build folder of a checkout
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
)
