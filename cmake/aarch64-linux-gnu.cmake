# CMake toolchain file: cross-compile for linux/arm64 on a Debian amd64 machine with Debian's
# cross toolchain (g++-aarch64-linux-gnu) and arm64 multiarch -dev packages
# (dpkg --add-architecture arm64; scripts/install-deps.sh --package installs them). protoc runs
# on the build machine: Debian's protobuf-compiler, the same version as libprotobuf-dev:arm64
# (multiarch keeps them in step).
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DGOHEAP2PPROF_STATIC=ON -DBUILD_TESTING=OFF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and pkg-config files of the arm64 multiarch packages only; programs (protoc) and
# the architecture-independent CMake packages (CLI11, nlohmann-json) from the build machine.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(Protobuf_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "protoc of the build machine")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
