# What is installed besides the executable, and the Debian package made of it (CPack):
#   bin/goheap2pprof
#   share/man/man1/goheap2pprof.1.gz                 generated from --help (packaging/make-manpage.sh)
#   share/bash-completion/completions/goheap2pprof   generated from --help (packaging/make-completions.sh)
#   share/zsh/vendor-completions/_goheap2pprof       same
#   lib/systemd/system/goheap2pprof-serve.service    packaging/goheap2pprof-serve.service with
#                                                    ExecStart pointing at the installed binary;
#                                                    installed, never enabled (no maintainer
#                                                    script runs systemctl)
#   share/doc/goheap2pprof/copyright                 packaging/copyright
# The man page and completions are made at build time by running the binary just built (under
# CMAKE_CROSSCOMPILING_EMULATOR when cross-compiling), so they cannot drift from --help.
include(GNUInstallDirs)

find_program(GOHEAP2PPROF_HELP2MAN help2man)
if(NOT GOHEAP2PPROF_HELP2MAN)
  message(FATAL_ERROR "help2man is needed to make goheap2pprof(1) from --help: apt-get install "
                      "help2man (scripts/install-deps.sh installs it)")
endif()
set(GOHEAP2PPROF_DOC_DIR ${PROJECT_BINARY_DIR}/packaging)
set(runner ${CMAKE_CROSSCOMPILING_EMULATOR})
# Ninja makes the folder of an output, make does not (the default generator, Unix Makefiles):
# the command makes it (tests/e2e/makefile_generator_test.sh).
add_custom_command(
  OUTPUT ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1 ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GOHEAP2PPROF_DOC_DIR}
  COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/make-manpage.sh
          ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1 ${runner} $<TARGET_FILE:goheap2pprof>
  COMMAND gzip -9nf -k ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1
  DEPENDS goheap2pprof ${PROJECT_SOURCE_DIR}/packaging/make-manpage.sh
          ${PROJECT_SOURCE_DIR}/packaging/help-lib.sh ${PROJECT_SOURCE_DIR}/packaging/goheap2pprof.h2m
  COMMENT "goheap2pprof(1) from --help (help2man)")
add_custom_command(
  OUTPUT ${GOHEAP2PPROF_DOC_DIR}/completions/goheap2pprof ${GOHEAP2PPROF_DOC_DIR}/completions/_goheap2pprof
  COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/make-completions.sh
          ${GOHEAP2PPROF_DOC_DIR}/completions ${runner} $<TARGET_FILE:goheap2pprof>
  DEPENDS goheap2pprof ${PROJECT_SOURCE_DIR}/packaging/make-completions.sh
          ${PROJECT_SOURCE_DIR}/packaging/help-lib.sh
  COMMENT "bash and zsh completions from --help")
add_custom_target(goheap2pprof_docs ALL DEPENDS ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1.gz
                  ${GOHEAP2PPROF_DOC_DIR}/completions/goheap2pprof
                  ${GOHEAP2PPROF_DOC_DIR}/completions/_goheap2pprof)

# The unit names the binary's installed path (the file in packaging/ says /usr/local/bin, the
# place of a hand install). Written at install time, since CPack installs the same build with
# its own prefix (/usr) into the package.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/packaging/goheap2pprof-serve.service)
install(CODE "
  file(READ [[${PROJECT_SOURCE_DIR}/packaging/goheap2pprof-serve.service]] unit)
  string(REPLACE /usr/local/bin/goheap2pprof \${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/goheap2pprof
         unit \"\${unit}\")
  file(WRITE [[${GOHEAP2PPROF_DOC_DIR}/systemd/goheap2pprof-serve.service]] \"\${unit}\")")
install(TARGETS goheap2pprof RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${GOHEAP2PPROF_DOC_DIR}/goheap2pprof.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${GOHEAP2PPROF_DOC_DIR}/completions/goheap2pprof
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${GOHEAP2PPROF_DOC_DIR}/completions/_goheap2pprof
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${GOHEAP2PPROF_DOC_DIR}/systemd/goheap2pprof-serve.service
        DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Debian package: `cpack --config <build>/CPackConfig.cmake` (scripts/package.sh), from the
# install rules above with the prefix /usr, whatever the build's CMAKE_INSTALL_PREFIX.
#
# It is made from the ordinary dynamic build, with Depends computed by dpkg-shlibdeps from the
# libraries the binary really links, plus the two it loads when a feature first needs them
# (dlopen, which dpkg-shlibdeps cannot see): Capstone for stripped binaries and libcurl for push.
# On a Debian machine apt then brings zlib, elfutils, protobuf, capstone, libseccomp, OpenSSL and
# libcurl (with their security updates, which a static copy inside the package would never get).
# The static tarball is for hosts without apt.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME goheap2pprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "goheap2pprof maintainers <maintainers@users.noreply.a-seed-3cb6a97e.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "capture the heap profile of a running Go process from outside it")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "goheap2pprof reads the sampled allocation statistics the Go runtime keeps from\n"
    "the memory of a running Go program (or its core file) and writes them as a\n"
    "gzipped pprof profile.proto meaning what the program's own /debug/pprof/heap\n"
    "would serve. No endpoint, code change, restart or pause is needed.\n"
    "Also: serve (every Go process as a pprof endpoint, with a systemd unit that is\n"
    "installed but not enabled) and watch (captures before an OOM kill).")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION ${CPACK_DEBIAN_PACKAGE_DESCRIPTION})
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcapstone4, libcurl4")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "man-db")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "golang-go")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
include(CPack)
