// The lmkit binary: one command line (commands/run_cli.cpp).
#include "command.h"

int main(int argc, char** argv) { return lmkit::cli::RunCli(argc, argv, /*standalone=*/true); }
