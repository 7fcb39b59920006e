/* cli.h: the subcommands of the tessera binary. Each returns the process exit status:
 * 0 success, 2 bad input or usage, 1 anything else. */
#ifndef TESSERA_CLI_H
#define TESSERA_CLI_H

int cli_sim(int argc, char **argv);
int cli_trace(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_calib(int argc, char **argv);
int cli_mem(int argc, char **argv);
int cli_exp(int argc, char **argv);
int cli_db(int argc, char **argv);
int cli_engine(int argc, char **argv); /* engine/cli_engine.c, built with CUDA */

#define EXIT_USAGE 2

#endif
