#!/usr/bin/env bash
# records.sh: the records' bulk data packed out of the way. A record (experiments/records/NAME/) keeps
# its README.md, its figures (PNG, which the docs show) and its small text files as they are; its data
# (every .gz, .tgz and .db, and any other file over 64 KiB) lives in NAME/data.tar.xz, gzip's layer
# taken off so that xz compresses across it.
#
#   records.sh pack DIR...          move DIR's data into DIR/data.tar.xz (a record being added)
#   records.sh unpack DST [NAME...] every record (or those named), its data back in place, under DST/NAME
#   records.sh get NAME PATH DEST   one file of a record (PATH as the record names it, e.g.
#                                   fidelity-h200 all-steps.csv.gz), packed or not, written to DEST
#
# The unpacked files are the recorded ones: a .gz comes back as gzip of the recorded bytes (same
# content, not the same compressed bytes). RECORDS names another records folder.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
records=${RECORDS:-$root/experiments/records}
usage() { sed -n '7,10p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }

# is_data FILE: whether FILE (a path inside a record) goes into the archive
is_data() {
    case $1 in
        */README.md | README.md | */data.tar.xz | *.png) return 1 ;;
        *.gz | *.tgz | *.db) return 0 ;;
    esac
    [ "$(stat -c %s "$1")" -gt 65536 ]
}

# member_of FILE: FILE's name in the archive, gzip's layer off (x.csv.gz: x.csv; x.tgz: x.tar)
member_of() {
    case $1 in *.gz) echo "${1%.gz}" ;; *.tgz) echo "${1%.tgz}.tar" ;; *) echo "$1" ;; esac
}

pack() {
    local dir=$1 stage f m list
    [ -d "$dir" ] || { echo "records.sh: $dir: not a folder" >&2; exit 2; }
    [ -e "$dir/data.tar.xz" ] && { echo "records.sh: $dir is packed already (data.tar.xz)" >&2; exit 2; }
    stage=$(mktemp -d)
    list=$stage/list
    (cd "$dir" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do
        if is_data "$f"; then echo "$f"; fi; done) >"$list"
    [ -s "$list" ] || { rm -rf "$stage"; echo "records.sh: $dir: no data to pack"; return 0; }
    mkdir "$stage/data"
    while read -r f; do
        mkdir -p "$stage/data/$(dirname "$f")"
        m=$(member_of "$f")
        if [ "$m" = "$f" ]; then cp "$dir/$f" "$stage/data/$f"; else gzip -dc "$dir/$f" >"$stage/data/$m"; fi
    done <"$list"
    # the archive's own list: each file as the record names it
    cp "$list" "$stage/data/MANIFEST"
    tar -C "$stage/data" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . |
        xz -9 -T1 >"$dir/data.tar.xz.part"
    mv "$dir/data.tar.xz.part" "$dir/data.tar.xz"
    while read -r f; do rm -f "$dir/$f"; done <"$list"
    find "$dir" -mindepth 1 -type d -empty -delete
    echo "records.sh: $dir: $(wc -l <"$list") files into data.tar.xz ($(stat -c %s "$dir/data.tar.xz") bytes)"
    rm -rf "$stage"
}

# expand ARCHIVE DST: the archive's files as the record names them, under DST
expand() {
    local f m
    xz -dc "$1" | tar -C "$2" -xf -
    while read -r f; do
        m=$(member_of "$f")
        if [ "$m" != "$f" ]; then gzip -1 -n <"$2/$m" >"$2/$f" && rm "$2/$m"; fi
    done <"$2/MANIFEST"
    rm "$2/MANIFEST"
}

unpack() {
    local dst=${1:?} name
    shift
    mkdir -p "$dst"
    if [ $# -eq 0 ]; then mapfile -t names < <(cd "$records" && ls) && set -- "${names[@]}"; fi
    for name; do
        [ -d "$records/$name" ] || { echo "records.sh: no record $name under $records" >&2; exit 2; }
        mkdir -p "$dst/$name"
        (cd "$records/$name" && tar --exclude=./data.tar.xz -cf - .) | tar -C "$dst/$name" -xf -
        if [ -f "$records/$name/data.tar.xz" ]; then expand "$records/$name/data.tar.xz" "$dst/$name"; fi
    done
}

get() {
    local name=${1:?} path=${2:?} dest=${3:?} arc=$records/$1/data.tar.xz member
    if [ -f "$records/$name/$path" ]; then cp "$records/$name/$path" "$dest"; return; fi
    [ -f "$arc" ] || { echo "records.sh: $name has no $path" >&2; exit 2; }
    member=$(member_of "$path")
    xz -dc "$arc" | tar -xOf - "./$member" >"$dest.part" 2>/dev/null ||
        { rm -f "$dest.part"; echo "records.sh: $name has no $path" >&2; exit 2; }
    if [ "$member" != "$path" ]; then gzip -1 -n <"$dest.part" >"$dest" && rm "$dest.part"; else mv "$dest.part" "$dest"; fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    pack) [ $# -gt 0 ] || usage; for d; do pack "$d"; done ;;
    unpack) [ $# -gt 0 ] || usage; unpack "$@" ;;
    get) [ $# -eq 3 ] || usage; get "$@" ;;
    --help | -h) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
    *) usage ;;
esac
