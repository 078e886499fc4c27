/* Subcommand entry points: each parses its own flags, prints one clear line
 * on bad input and returns the process exit status. */
#ifndef SPLASH_COMMANDS_H
#define SPLASH_COMMANDS_H

#define EXIT_USAGE 2 /* bad command line */

int cmd_run(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_perf(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_grammar(int argc, char **argv);
int cmd_qualify(int argc, char **argv);

/* Path of the built-in default model (next to the binary: models/default.gguf). */
const char *cli_default_model(void);

#endif
