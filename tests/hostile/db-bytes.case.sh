# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# Damaged databases: a run's database with bytes overwritten at random places by random bytes (a
# fixed seed) is merged, checked and appended to; each command ends with a status of its own (0, 1
# or 2), never killed by a signal, and a refused merge leaves no OUT.
# (Sourced by hostile_test.sh in a folder of its own.)
"$bin" sim --requests 6 --rps 4 --gen-len 32 --quiet --no-progress --db base.db >/dev/null
size=$(stat -c %s base.db)
psize=$(sqlite3 base.db "PRAGMA page_size")
# bytes N: N bytes drawn from RANDOM (the trials are the same every run)
bytes() {
    local i
    for ((i = 0; i < $1; i++)); do printf '%b' "\\$(printf %03o $((RANDOM % 256)))"; done
}
RANDOM=89
for trial in $(seq 24); do
    cp base.db d.db
    # four runs of 1 to 16 bytes: in the first page's head (the file's header, the schema's cell
    # pointers), in its tail (the schema's text), and two anywhere
    for k in 1 2 3 4; do
        case $k in
        1) at=$((RANDOM % 512)) ;;
        2) at=$((psize - 1 - RANDOM % 4096)) ;;
        *) at=$(((RANDOM * 32768 + RANDOM) % size)) ;;
        esac
        len=$((RANDOM % 16 + 1))
        bytes "$len" | dd of=d.db bs=1 seek="$at" conv=notrunc status=none
    done
    rm -f m.db
    for cmd in "db merge m.db d.db" "db check d.db" "sim --requests 2 --quiet --no-progress --db d.db --append"; do
        # shellcheck disable=SC2086 # the command's words
        timeout 60 "$bin" $cmd >/dev/null 2>&1
        rc=$?
        [ "$rc" -le 2 ] && ok || bad "damaged database, trial $trial: tessera $cmd ended with status $rc"
        case $cmd in
        "db merge"*) [ "$rc" -eq 0 ] || [ ! -e m.db ] && ok || bad "trial $trial: a refused merge left m.db" ;;
        esac
    done
done
