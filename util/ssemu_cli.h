/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared pieces of the slingshot-emu command-line tool. */
#ifndef SSEMU_CLI_H
#define SSEMU_CLI_H

#include <stdint.h>

/* Parse a number in [lo, hi]; print a clear error naming @opt and return
 * -1 on bad input. */
int ssemu_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out);
int ssemu_cli_double(const char *opt, const char *s, double lo, double hi,
		     double *out);

int ssemu_cmd_sim(int argc, char **argv);
int ssemu_cmd_impact(int argc, char **argv);
int ssemu_cmd_status(int argc, char **argv);
int ssemu_cmd_stat(int argc, char **argv);
int ssemu_cmd_clean(int argc, char **argv);
int ssemu_cmd_run(int argc, char **argv);
int ssemu_cmd_mpirun(int argc, char **argv);

#endif
