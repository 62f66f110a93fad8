// xsp: the command-line front end (src/cli/cli.h).
#include "cli.h"

int main(int argc, char** argv) { return xsp::cli::run_cli(argc, argv); }
