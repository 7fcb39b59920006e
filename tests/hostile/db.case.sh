# shellcheck shell=bash disable=SC2154,SC2015 # bin: hostile_test.sh's; CHECK && ok || bad: one of them runs
# Databases handed to tessera: db merge copies data and never code. Crafted inputs are refused by
# name (exit 2), leaving OUT as it was and nothing beside it; inputs are read-only to it; a database
# is not merged into itself; db check takes files alone; concurrent writers leave no logs behind.
# (Sourced by hostile_test.sh in a folder of its own.)
q() { sqlite3 "$1" "$2" 2>/dev/null; }
"$bin" sim --requests 3 --rps 4 --gen-len 32 --quiet --no-progress --db run.db >/dev/null || bad "db: the first run failed"
sum() { cksum <"$1"; }

# crafted(NAME SQL): a copy of run.db with SQL run in it by sqlite3 itself
crafted() { cp run.db "$1" && sqlite3 "$1" "$2"; }
# refused(WHAT IN TEXT): db merge of IN into a new OUT exits 2, names TEXT, and leaves no OUT
refused() {
    rm -f new.db
    expect 2 "db merge of $1" -- "$bin" db merge new.db "$2"
    contains "db merge of $1" "$3"
    [ ! -e new.db ] && [ ! -e new.db-wal ] && [ ! -e new.db-journal ] && ok || bad "db merge of $1 left an OUT"
}

# the audit's input: a table whose name closes the merge's transaction and attaches a file
crafted evil.db "CREATE TABLE evil(\"a\"\") SELECT 1,1; COMMIT; ATTACH 'outside.db' AS p; CREATE TABLE p.t(x); BEGIN; --\" TEXT, a TEXT, run_id INTEGER); INSERT INTO evil VALUES('x','y',1)"
refused "a table of a quoted name" evil.db "holds table 'evil"
[ ! -e outside.db ] && ok || bad "db merge ran the input's SQL: outside.db exists"
# a trigger, a view and an index of their own, a column no tessera table has, a column of a quoted name
crafted trig.db "CREATE TRIGGER t AFTER INSERT ON runs BEGIN SELECT 1; END"
refused "a trigger" trig.db "holds trigger 't'"
crafted view.db "CREATE VIEW v AS SELECT fts3_tokenizer('simple')"
refused "a view" view.db "holds view 'v'"
crafted idx.db "CREATE INDEX i ON runs(seed)"
refused "an index" idx.db "holds index 'i'"
crafted col.db "ALTER TABLE summary ADD COLUMN extra TEXT"
refused "an extra column" col.db "table summary has a column definition no tessera database has: 'extra TEXT'"
crafted qcol.db "ALTER TABLE runs ADD COLUMN \"x\"\"); ATTACH 'outside.db' AS p; --\" TEXT"
refused "a column of a quoted name" qcol.db "table runs has a column definition no tessera database has: '\"x\"\"); ATTACH"
[ ! -e outside.db ] && ok || bad "db merge ran a column name: outside.db exists"
# tessera's own view over its step runs replaced: refused by its text, like any object not tessera's
crafted fview.db "DROP VIEW steps; CREATE VIEW steps AS SELECT fts3_tokenizer('simple') AS run_id"
refused "a replaced view" fview.db "holds view 'steps', which is not tessera's"

# a merge that fails midway leaves a new OUT not made and an existing OUT as it was: an input past
# the size the integrity check reads through (DB_CHECK_MAX_BYTES), whose requests table holds a
# request twice behind an index that does not know it (written as a file's maker can)
"$bin" sim --requests 90000 --rps 200 --gen-len 32 --quiet --no-progress --db nokey.db >/dev/null
ip=$(q nokey.db "SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_requests_1'")
sqlite3 nokey.db "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, ', PRIMARY KEY(run_id, req_id)', '')
    WHERE name = 'requests'; DELETE FROM sqlite_schema WHERE name = 'sqlite_autoindex_requests_1'"
sqlite3 nokey.db "INSERT INTO requests SELECT * FROM requests WHERE req_id < 3"
sqlite3 nokey.db "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, ', reject_reason TEXT)',
    ', reject_reason TEXT, PRIMARY KEY(run_id, req_id))') WHERE name = 'requests';
    INSERT INTO sqlite_schema VALUES('index', 'sqlite_autoindex_requests_1', 'requests', $ip, NULL)"
refused "an input that fails midway" nokey.db "UNIQUE constraint failed"
"$bin" sim --requests 3 --rps 4 --gen-len 32 --seed 9 --quiet --no-progress --db out.db >/dev/null
before=$(sqlite3 out.db .dump | cksum)
expect 2 "db merge into an existing OUT that fails midway" -- "$bin" db merge out.db nokey.db
[ "$(sqlite3 out.db .dump | cksum)" = "$before" ] && ok || bad "a failed merge changed an existing OUT"
# (each input lands whole or not at all: the one before the failing one stays)
expect 2 "db merge of two inputs, the second failing midway" -- "$bin" db merge out.db run.db nokey.db
contains "db merge of two inputs, the second failing midway" "1 of 2 databases merged"
[ "$(q out.db "SELECT count(*) FROM runs")" = 2 ] && ok || bad "a merge that failed midway lost the input it had merged"
rm -f nokey.db
# an OUT that holds what no tessera database holds (a payload an older merge carried) is refused
cp run.db payload.db
sqlite3 payload.db "CREATE TABLE evil(a TEXT, run_id INTEGER)"
before=$(sum payload.db)
expect 2 "db merge into an OUT holding a payload" -- "$bin" db merge payload.db out.db
contains "db merge into an OUT holding a payload" "payload.db: holds table 'evil'"
[ "$(sum payload.db)" = "$before" ] && ok || bad "db merge wrote into an OUT holding a payload"

# a database is not merged into itself, by any of its names; the refusal is at once
ln -s run.db link.db
for name in run.db ./run.db link.db "$PWD/run.db"; do
    expect 2 "db merge of run.db into itself as $name" -- timeout 20 "$bin" db merge run.db "$name"
    contains "db merge of run.db into itself as $name" "is OUT itself"
done
# inputs are read-only to it: a read-only input merges, and is left byte for byte
cp run.db ro.db
chmod a-w ro.db
before=$(sum ro.db)
expect 0 "db merge of a read-only input" -- "$bin" db merge ro-out.db ro.db
[ "$(sum ro.db)" = "$before" ] && [ ! -e ro.db-wal ] && ok || bad "db merge changed its read-only input"
[ "$(q ro-out.db "SELECT count(*) FROM runs")" = 1 ] && ok || bad "db merge of a read-only input lost its run"

# db check takes files alone; a database of other tables is named as such
expect 2 "db check /dev/zero" -- "$bin" db check /dev/zero
contains "db check /dev/zero" "not a regular file"
sqlite3 other.db "CREATE TABLE runs(x INTEGER); CREATE TABLE t(y);"
expect 2 "--append to a database of other tables" -- "$bin" sim --requests 2 --quiet --no-progress --db other.db --append
contains "--append to a database of other tables" "not a tessera database (table runs has a column definition no tessera database has: 'x INTEGER')"

# --append runs no trigger the database holds
cp run.db trig-append.db
sqlite3 trig-append.db "CREATE TABLE log(x); CREATE TRIGGER t AFTER INSERT ON runs BEGIN INSERT INTO log VALUES(1); END"
"$bin" sim --requests 2 --quiet --no-progress --db trig-append.db --append >/dev/null 2>&1
[ "$(q trig-append.db "SELECT count(*) FROM log")" = 0 ] && ok || bad "--append fired the database's trigger"

# writers started together without --append: one lands, the others are refused, and no -wal or -shm
# file is left beside the database
for i in 1 2 3 4 5 6; do
    "$bin" sim --requests 3 --rps 4 --gen-len 32 --seed "$i" --quiet --no-progress --db together.db >/dev/null 2>&1 &
done
wait
[ "$(q together.db "SELECT count(*) FROM runs")" = 1 ] && ok || bad "writers together: not exactly one run landed"
[ ! -e together.db-wal ] && [ ! -e together.db-shm ] && ok || bad "writers together left -wal or -shm files"
