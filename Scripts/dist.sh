#!/usr/bin/env bash
# `make dist`: apnsctl as a release that runs without Swift.
#
#   dist/apnsctl-VERSION-linux-ARCH.tar.gz   apnsctl-VERSION-linux-ARCH/{bin,share,LICENSE,README}
#   dist/apnsctl_VERSION_DEBARCH.deb         the same files under /usr
#
# The binary is built in release mode with the Swift runtime and Foundation linked statically
# (--static-swift-stdlib), then stripped; what it still links dynamically (OpenSSL, nghttp2,
# SQLite, the C and C++ runtimes) becomes the package's Depends, read from the binary itself.
#
# It is built from the files of HEAD (`git archive`), never from the working tree: the commit it
# names in `apnsctl --version` is exactly what it was built from, and uncommitted edits stay out.
# That copy lives in .build-dist/src and its build in .build-dist/scratch, both kept between
# runs: only files that differ from the last export are rewritten, so a second `make dist` is an
# incremental build. The working tree's Package.resolved (not in git) is copied in when present,
# so the release links the dependency versions the tests ran with.
#
# Environment: SWIFT (default swift), DIST_DIR (default dist), DIST_WORK (default .build-dist).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
swift=${SWIFT:-swift}
out=$(mkdir -p "${DIST_DIR:-dist}" && cd "${DIST_DIR:-dist}" && pwd)
work=$(mkdir -p "${DIST_WORK:-.build-dist}" && cd "${DIST_WORK:-.build-dist}" && pwd)
src=$work/src
scratch=$work/scratch

commit=$(git rev-parse --short=12 HEAD)
version=$(git show HEAD:Sources/apnsctl/Support/Version.swift | sed -n 's/^ *static let current = "\(.*\)"$/\1/p')
[ -n "$version" ] || { echo "dist: no version in Sources/apnsctl/Support/Version.swift at HEAD" >&2; exit 65; }
arch=$(uname -m)
debarch=$(dpkg --print-architecture)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "dist: note: the working tree has uncommitted changes; they are not in the release (built from $commit)" >&2
fi

# 1. HEAD's files, with the commit written into Version.swift, synchronised into $src.
export_dir=$(mktemp -d "$work/export.XXXXXX")
trap 'rm -rf "$export_dir"' EXIT
git archive --format=tar HEAD | tar -x -C "$export_dir"
version_file=$export_dir/Sources/apnsctl/Support/Version.swift
sed -i "s/^\( *static let commit = \)\"\"$/\1\"$commit\"/" "$version_file"
grep -q "static let commit = \"$commit\"" "$version_file" \
    || { echo "dist: could not write the commit into Sources/apnsctl/Support/Version.swift" >&2; exit 70; }
[ -f Package.resolved ] && cp Package.resolved "$export_dir/Package.resolved"
mkdir -p "$src"
(cd "$export_dir" && find . -type f -print0) | while IFS= read -r -d '' file; do
    if ! cmp -s "$export_dir/$file" "$src/$file"; then
        mkdir -p "$(dirname "$src/$file")" && cp "$export_dir/$file" "$src/$file"
    fi
done
# Files HEAD no longer has (SwiftPM's own files in .build or .swiftpm are not in $src).
(cd "$src" && find . -type f -not -path './.swiftpm/*' -print0) | while IFS= read -r -d '' file; do
    [ -e "$export_dir/$file" ] || rm -f "$src/$file"
done

# 2. Build, make the man page, install into a staging folder as /usr (Scripts/install.sh, as
#    make install does). The man page comes from swift-argument-parser's generate-manual, the tool
#    that make manual's plugin runs, here run directly on the built binary: the plugin builds
#    the whole package with flags of its own and takes no --static-swift-stdlib, so in a shared
#    build folder it and this build would recompile each other's modules on every make dist.
#    --no-export-dynamic undoes the -export-dynamic of the toolchain's
#    swift_static/linux/static-stdlib-args.lnk: exported, every public symbol of every package
#    module is a root for --gc-sections and is kept whether used or not. Without it a crash's
#    backtrace names fewer functions; the binary is stripped anyway.
#
#    ICU's data is linked reduced (Scripts/icu-data-filter.py says what goes and why): the
#    toolchain's lib_FoundationICU.a holds the data as one object that defines one symbol
#    (icudtNN_dat). The linker's --wrap turns every reference to it into one to __wrap_icudtNN_dat,
#    which an object of ours defines with the reduced data, so nothing needs the archive's member
#    and it stays out of the link (an object defining the symbol itself would come after the
#    archive on the command line, too late).
resources=$("$swift" -print-target-info | sed -n 's/^ *"runtimeResourcePath": "\(.*\)",*$/\1/p' | head -n 1)
icu_archive=${resources}_static/linux/lib_FoundationICU.a
[ -f "$icu_archive" ] || { echo "dist: no $icu_archive: this toolchain cannot link Foundation statically" >&2; exit 70; }
icu=$work/icu
rm -rf "$icu" && mkdir -p "$icu"
member=$(ar t "$icu_archive" | grep -E '^icu_packaged_data[^/]*\.o$' | head -n 1)
[ -n "$member" ] || { echo "dist: $icu_archive has no icu_packaged_data object: see Scripts/dist.sh" >&2; exit 70; }
(cd "$icu" && ar x "$icu_archive" "$member")
symbol=$(nm "$icu/$member" | awk '$2 == "R" { print $3 }')
[ -n "$symbol" ] || { echo "dist: no data symbol in $member" >&2; exit 70; }
objcopy -O binary --only-section=.rodata "$icu/$member" "$icu/full.dat"
python3 "$src/Scripts/icu-data-filter.py" "$icu/full.dat" "$icu/reduced.dat"
cat > "$icu/data.S" <<EOF
    .section .rodata
    .globl __wrap_$symbol
    .type __wrap_$symbol, @object
    .balign 16
__wrap_$symbol:
    .incbin "$icu/reduced.dat"
    .size __wrap_$symbol, . - __wrap_$symbol
    .section .note.GNU-stack,"",@progbits
EOF
toolchain_bin=$(dirname "$(readlink -f "$(command -v "$swift")")")
"$toolchain_bin/clang" -c "$icu/data.S" -o "$icu/data.o"
flags=(-c release --package-path "$src" --scratch-path "$scratch" --static-swift-stdlib -Xlinker --no-export-dynamic
       -Xlinker "$icu/data.o" -Xlinker "--wrap=$symbol")
"$swift" build "${flags[@]}" --product apnsctl
"$swift" build "${flags[@]}" --product generate-manual
bin=$("$swift" build "${flags[@]}" --show-bin-path)
linked_hex=$(nm -S "$bin/apnsctl" | awk -v symbol="__wrap_$symbol" '$4 == symbol { print $2 }')
linked=$((16#${linked_hex:-0}))
[ "$linked" = "$(stat -c %s "$icu/reduced.dat")" ] && ! nm "$bin/apnsctl" | grep -q " $symbol\$" \
    || { echo "dist: apnsctl links ICU data of ${linked:-no} bytes, not only the reduced data's $(stat -c %s "$icu/reduced.dat")" >&2; exit 70; }
rm -rf "$work/manual" && mkdir -p "$work/manual"
"$bin/generate-manual" "$bin/apnsctl" --output-directory "$work/manual"
stage=$work/stage
rm -rf "$stage"
"$src/Scripts/install.sh" "$stage/usr" "$bin/apnsctl" "$work/manual/apnsctl.1" >/dev/null
binary=$stage/usr/bin/apnsctl
strip --strip-all "$binary"

printed=$("$binary" --version)
[ "$printed" = "$version (commit $commit)" ] \
    || { echo "dist: the built apnsctl says '$printed', not '$version (commit $commit)'" >&2; exit 70; }
# Nothing of the toolchain may be linked dynamically.
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
if grep -Eiq 'swift|Foundation|dispatch|BlocksRuntime|icu' <<<"$needed"; then
    echo "dist: apnsctl still links part of the Swift toolchain:" $needed >&2
    exit 70
fi

# 3. Depends: the Debian package of each library the binary names (NEEDED). A library not in
#    this table stops the build, so the list is always what the binary really links.
depends=()
add_depend() { local d; for d in "${depends[@]}"; do [ "$d" = "$1" ] && return 0; done; depends+=("$1"); }
# glibc: the newest symbol version the binary asks for is the version it needs.
glibc=$(readelf --version-info --wide "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
for library in $needed; do
    case $library in
        libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | libutil.so.1 | ld-linux-*.so.*) add_depend "libc6 (>= $glibc)" ;;
        libstdc++.so.6) add_depend "libstdc++6" ;;
        libgcc_s.so.1) add_depend "libgcc-s1" ;;
        libssl.so.3 | libcrypto.so.3) add_depend "libssl3 | libssl3t64" ;;
        libnghttp2.so.14) add_depend "libnghttp2-14" ;;
        libsqlite3.so.0) add_depend "libsqlite3-0" ;;
        libz.so.1) add_depend "zlib1g" ;;
        *) echo "dist: apnsctl links $library, which has no Debian package in Scripts/dist.sh's table: add it" >&2; exit 70 ;;
    esac
done
# Not linked, but read at run time: the system's CA certificates verify api.push.apple.com.
add_depend "ca-certificates"
depends_line=$(printf '%s, ' "${depends[@]}"); depends_line=${depends_line%, }

# What apnsctl is built from besides ForgePush, each with its licence: the toolchain's runtime
# and ICU (Scripts/toolchain-notices.txt, then the toolchain's own LICENSE.txt), and every
# package the build resolved, with the licence and NOTICE files of its checkout.
notices() {
    echo "Third-party software in apnsctl $version (commit $commit)"
    echo
    cat "$src/Scripts/toolchain-notices.txt"
    echo
    cat "$toolchain_bin/../share/swift/LICENSE.txt"
    echo
    echo "Swift packages of the build (Package.resolved; some serve only other products or the tests)"
    echo "========================================================================================="
    local checkout name files file
    for checkout in "$scratch"/checkouts/*/; do
        name=$(basename "$checkout")
        files=$(find "$checkout" -maxdepth 1 -type f \( -iname 'LICENSE*' -o -iname 'LICENCE*' -o -iname 'COPYING*' -o -iname 'NOTICE*' \) | sort)
        [ -n "$files" ] || { echo "dist: $name has no licence file in its checkout" >&2; exit 70; }
        echo
        echo "--- $name $(git -C "$checkout" describe --tags --always 2>/dev/null) ---"
        for file in $files; do echo; cat "$file"; done
    done
}

readme() {
    cat <<EOF
apnsctl $version (commit $commit), for Linux $arch
Send Apple push notifications and Live Activity updates from a shell; run a local
APNs-compatible server (apnsctl serve) and an end-to-end demo (apnsctl demo).

This build needs no Swift toolchain: the Swift runtime and Foundation are linked into the binary.
It needs these shared libraries (Debian packages: $depends_line):
$(sed 's/^/  /' <<<"$needed")

Contents, laid out as a prefix such as /usr/local:
  bin/apnsctl
  share/man/man1/apnsctl.1                       man apnsctl
  share/bash-completion/completions/apnsctl
  share/zsh/site-functions/_apnsctl
  share/fish/vendor_completions.d/apnsctl.fish
  LICENSE                                        Apache License 2.0
  THIRD_PARTY_NOTICES                            what else is linked in, with its licences

Install: sudo cp -r bin share /usr/local/   (or run bin/apnsctl where it is)
Start:   apnsctl --help; apnsctl demo
EOF
}

# 4. The tarball: one folder named like the file, owned by root, files dated by the commit.
name=apnsctl-$version-linux-$arch
date=$(git log -1 --format=%cI HEAD)
tree=$work/tar/$name
rm -rf "$work/tar"
mkdir -p "$tree"
cp -r "$stage/usr/bin" "$stage/usr/share" "$tree/"
cp LICENSE "$tree/LICENSE"
notices > "$tree/THIRD_PARTY_NOTICES"
readme > "$tree/README"
tarball=$out/$name.tar.gz
rm -f "$out"/apnsctl-*-linux-"$arch".tar.gz
tar -C "$work/tar" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$date" -cf - "$name" | gzip -9n > "$tarball"

# 5. The .deb: the same files under /usr, the man page compressed and the licence in
#    /usr/share/doc/apnsctl/copyright, as Debian's policy asks.
package=$work/deb
rm -rf "$package"
mkdir -p "$package/DEBIAN" "$package/usr/share/doc/apnsctl"
cp -r "$stage/usr/bin" "$stage/usr/share" "$package/usr/"
gzip -9n "$package/usr/share/man/man1/apnsctl.1"
cp LICENSE "$package/usr/share/doc/apnsctl/copyright"
notices > "$package/usr/share/doc/apnsctl/THIRD_PARTY_NOTICES"
readme > "$package/usr/share/doc/apnsctl/README"
cat > "$package/DEBIAN/control" <<EOF
Package: apnsctl
Version: $version
Architecture: $debarch
Maintainer: ForgePush maintainers <maintainers@forgepush.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$package" | cut -f1)
Depends: $depends_line
Section: net
Priority: optional
Description: Apple push notifications from a shell (APNs provider API)
 apnsctl sends push notifications and Live Activity updates to Apple's
 push service with a token (.p8) or certificate, and runs a local
 APNs-compatible server on loopback for tests. Built from commit $commit;
 the Swift runtime is linked in, no Swift toolchain is needed.
EOF
find "$package" -type d -exec chmod 755 {} +
deb=$out/apnsctl_${version}_$debarch.deb
rm -f "$out"/apnsctl_*_"$debarch".deb
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD) dpkg-deb --root-owner-group -Zxz --build "$package" "$deb" >/dev/null

echo "dist: apnsctl $version (commit $commit), stripped binary $(stat -c %s "$binary") bytes"
echo "dist: links $(tr '\n' ' ' <<<"$needed")"
echo "dist: $tarball ($(stat -c %s "$tarball") bytes)"
echo "dist: $deb ($(stat -c %s "$deb") bytes; Depends: $depends_line)"
