"""Builds the llaisys package with CMake, for `pip install --no-build-isolation ./python`.

The native part is the CMake target llaisys_python_package (python/CMakeLists.txt): the pybind11
module, libllaisys.so and the model plugins. They are copied into the package as

    llaisys/_llaisys.*.so                the module (run path $ORIGIN/lib)
    llaisys/lib/libllaisys.so.1          the C API
    llaisys/lib/llaisys/plugins/*.so     the plugins, where libllaisys looks by default

so the installed package needs nothing from the source or build tree (only Debian's shared
libraries the engine links: Boost.JSON, fmt, spdlog, ICU, ...).

Where it builds: $LLAISYS_BUILD_DIR when set (an existing build, e.g. build/default: only the
package's targets are built, in seconds when they are up to date), else build/python-pip in the
repository (configured here: Release, no tests). CMAKE_ARGS adds configure arguments; CMAKE_BUILD_PARALLEL_LEVEL
the job count.
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the CMake project (pip builds in the source tree: pip >= 21.3)


class BinaryDistribution(Distribution):
    """The wheel holds native code: tag it for this platform and Python."""

    def has_ext_modules(self):
        return True


class CMakeBuildPy(build_py):
    def run(self):
        super().run()
        build_dir = Path(os.environ.get("LLAISYS_BUILD_DIR") or ROOT / "build" / "python-pip").resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                                   "-DCMAKE_BUILD_TYPE=Release", "-DLLAISYS_BUILD_TESTS=OFF",
                                   "-DLLAISYS_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                                   *shlex.split(os.environ.get("CMAKE_ARGS", ""))])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "llaisys_python_package"])

        package = Path(self.build_lib) / "llaisys"
        modules = glob.glob(str(build_dir / "python" / "llaisys" / "_llaisys*.so"))
        if not modules:
            sys.exit(f"no _llaisys module in {build_dir}/python/llaisys: was pybind11-dev found?")
        for module in modules:
            shutil.copy2(module, package)
        lib = package / "lib"
        plugins = lib / "llaisys" / "plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        # The soname file only (libllaisys.so.1): what the module's DT_NEEDED names.
        shutil.copy2(build_dir / "lib" / "libllaisys.so.1", lib / "libllaisys.so.1", follow_symlinks=True)
        for plugin in glob.glob(str(build_dir / "lib" / "llaisys" / "plugins" / "libllaisys-*.so")):
            if not plugin.endswith("libllaisys-mock.so"):
                shutil.copy2(plugin, plugins)


setup(cmdclass={"build_py": CMakeBuildPy}, distclass=BinaryDistribution)
