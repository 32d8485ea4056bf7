#include "cli/app.hpp"

int main(int argc, char** argv) { return cmt::cli::run(argc, argv); }
