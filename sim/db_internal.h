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
/* Brings the database `name` (main, out, src) to the current schema; 0 or -1. */
int db_upgrade(sqlite3 *db, const char *name);
/* SQLite's message for db's last failure, with the system's where one caused it: into buf. */
const char *db_why(sqlite3 *db, char *buf, size_t len);
/* Whether the connection's last failure is one another writer's work causes (trying again clears it). */
bool db_transient(sqlite3 *db);

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

/* db_write.c */
/* A database written, left in rollback-journal mode where no other connection has it open (a writer
 * at work keeps WAL, the last to finish leaves it); a signal meanwhile waits for the switch. */
void db_leave_rollback(const char *path);

#endif
