#!/bin/sh
# Installs apnsctl under a prefix: what `make install` runs after building, and what InstallTests
# runs with the tests' debug build.
#
#   Scripts/install.sh PREFIX BINARY MANPAGE
#       PREFIX/bin/apnsctl                                   BINARY
#       PREFIX/share/man/man1/apnsctl.1                      MANPAGE (swift-argument-parser's generate-manual)
#       PREFIX/share/bash-completion/completions/apnsctl     apnsctl --generate-completion-script bash
#       PREFIX/share/zsh/site-functions/_apnsctl             ... zsh
#       PREFIX/share/fish/vendor_completions.d/apnsctl.fish  ... fish
#   Scripts/install.sh --uninstall PREFIX
#       removes exactly those files (the folders stay: they are shared).
set -eu

files="bin/apnsctl share/man/man1/apnsctl.1 share/bash-completion/completions/apnsctl share/zsh/site-functions/_apnsctl share/fish/vendor_completions.d/apnsctl.fish"
usage() {
    echo "usage: $0 PREFIX BINARY MANPAGE | $0 --uninstall PREFIX" >&2
    exit 64
}

if [ "${1-}" = "--uninstall" ]; then
    [ $# -eq 2 ] || usage
    for file in $files; do
        if [ -e "$2/$file" ]; then rm -f "$2/$file" && echo "removed $2/$file"; fi
    done
    exit 0
fi

[ $# -eq 3 ] || usage
prefix=$1 binary=$2 manual=$3
[ -n "$prefix" ] || { echo "$0: PREFIX is empty" >&2; exit 64; }
[ -x "$binary" ] || { echo "$0: $binary is not an executable: build apnsctl first (make install does)" >&2; exit 66; }
[ -f "$manual" ] || { echo "$0: no man page at $manual: \`make manual\` makes it (make install and make test do)" >&2; exit 66; }

install -d "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
install -m 755 "$binary" "$prefix/bin/apnsctl"
# generate-manual separates paragraphs with an empty line, which mdoc warns about ("Empty input
# line"): a paragraph macro instead.
sed 's/^$/.Pp/' "$manual" > "$prefix/share/man/man1/apnsctl.1"
chmod 644 "$prefix/share/man/man1/apnsctl.1"
"$prefix/bin/apnsctl" --generate-completion-script bash > "$prefix/share/bash-completion/completions/apnsctl"
"$prefix/bin/apnsctl" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_apnsctl"
"$prefix/bin/apnsctl" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/apnsctl.fish"
for file in $files; do echo "installed $prefix/$file"; done
