/*
 * db_internal.h: what the database's files (db_*.c) share among themselves.
 */
#ifndef TESSERA_DB_INTERNAL_H
#define TESSERA_DB_INTERNAL_H

#include <stddef.h>

#include "db.h"

/* db_schema.c */
/* The columns of a run of steps (step_runs but run_id and its first and last step and start), and
 * of a run of a request's segments (segment_runs but run_id and its first and last step). */
const char *db_step_cols(void);
extern const char *const db_seg_cols;
/* The schema with every table in the attached database `name`. Caller frees. */
char *db_schema_in(const char *name);
/* The fleet tables' schema (fleets, fleet_replicas, fleet_readings) in database `name`: made with a
 * database's first fleet. Caller frees. */
char *db_fleet_schema_in(const char *name);
/* The index over the segment runs, made by their first reader (db_segments_prepare). */
#define DB_SEGMENT_INDEX "CREATE INDEX IF NOT EXISTS segment_runs_first ON segment_runs(run_id, first_step)"
/* The tables an engine replay adds (engine_steps, engine_step_ops) in database `name`. Caller frees. */
char *db_engine_schema_in(const char *name);
/* The plan's table (plan_candidates) in database `name`: made with a database's first candidate. Caller frees. */
char *db_plan_schema_in(const char *name);
/* What a database written before column `col` of `table` was added reads it as ("0" or "NULL"), or
 * NULL where every version's table has it. */
const char *db_column_fill(const char *table, const char *col);
/* Whether piece ("col TYPE ...") is a column an upgrade adds to table (an older database's tables
 * `steps` and `segments` among them), as ALTER TABLE writes it into the table's statement. */
bool db_added_piece(const char *table, const char *piece);
/* Whether table or view `table` of the attached database `name` (main, out, src) has column `col`:
 * 1 or 0, -1 on an SQLite error. */
int db_has_column(sqlite3 *db, const char *name, const char *table, const char *col);
/* Whether `name`.`what` is a table rather than a view or nothing (*out); 0, or -1 on an SQLite error. */
int db_is_table(sqlite3 *db, const char *name, const char *what, bool *out);
/* Whether the main database holds a table named `what` (not a view); false on an SQLite error. */
bool db_has_table(sqlite3 *db, const char *what);
/* The views of step and segment rows over the runs of them (steps, segments) made in schema `name`
 * (temp: over the main database's runs, for a connection that reads it); 0 or -1. */
int db_views_in(sqlite3 *db, const char *name);
/* One view's statement (steps: the steps view, else the segments view) over row columns cols, made by
 * `create` ("CREATE VIEW IF NOT EXISTS name." to make it, "CREATE VIEW " as SQLite stores it): into buf. */
void db_view_sql(bool steps, const char *create, const char *cols, char *buf, size_t len);
/* Brings the database `name` (main, out, src) to the current schema; 0 or -1. */
int db_upgrade(sqlite3 *db, const char *name);
/* SQLite's message for db's last failure, with the system's where one caused it: into buf. */
const char *db_why(sqlite3 *db, char *buf, size_t len);
/* Whether the connection's last failure is one another writer's work causes (trying again clears it). */
bool db_transient(sqlite3 *db);
/* sqlite3_prepare_v2, waiting out another writer's schema change (a new database being made: its
 * tables, views and journal mode); any other failure returns at once. */
int db_prepare_waiting(sqlite3 *db, const char *sql, sqlite3_stmt **st);

/* db_file.c */
/* The schema laid out in memory and written into fd as a whole database file (WAL mode where wal). */
int db_lay_out(int fd, const char *path, bool wal, struct ts_err *err);
/* Links the unnamed file fd under path, where nothing is yet. */
int db_link_whole(int fd, const char *path, struct ts_err *err);
/* An unnamed file in path's folder (O_TMPFILE), or -1. */
int db_unnamed_beside(const char *path);
/* A new database made whole or not at all at path. */
int db_create_whole(const char *path, struct ts_err *err);
/* Registers the VFS "tessera-fd" (SQLite's files opened by descriptor); 0, or -1 where it cannot. */
int db_fd_vfs(void);

/* db_own.c */
/* The declared schema in memory: every table, view and index a tessera database may hold (caller
 * closes *decl); 0, or -1 with err. */
int db_declared(sqlite3 **decl, struct ts_err *err);

/* db_guard.c */
/* The guards (db_guard.c's head) set on one connection: 0, or -1 where SQLite refused one. */
int db_guard(sqlite3 *db);
/* Defensive mode off on a connection that writes a file of tessera's own making alone (a new
 * database in an unnamed file, which no journal may be written beside), on again for every other. */
int db_guard_trust(sqlite3 *db, bool own_file);
/* ATTACH of path as `name` (a constant of tessera's), the one the guard lets through; SQLite's code. */
int db_attach(sqlite3 *db, const char *path, const char *name);

/* db_write.c */
/* A database written, left in rollback-journal mode where no other connection has it open (a writer
 * at work keeps WAL, the last to finish leaves it); a signal meanwhile waits for the switch. */
void db_leave_rollback(const char *path);

#endif
