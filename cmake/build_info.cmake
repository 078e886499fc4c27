# Writes build_info.h at build time (not configure time), so the git
# revision a binary reports is the one it was built from. configure_file
# leaves the file untouched when nothing changed, so nothing rebuilds then.
# Inputs: SRC (source dir), OUT (header path), and the @-variables below.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE SPLASH_GIT_REV OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT SPLASH_GIT_REV)
    set(SPLASH_GIT_REV "unknown")
elseif(dirty)
    set(SPLASH_GIT_REV "${SPLASH_GIT_REV}-dirty")
endif()
configure_file(${SRC}/src/base/build_info.h.in ${OUT} @ONLY)
