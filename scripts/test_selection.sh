# Which CPU tests each of scripts/test.sh's two runs takes; sourced by scripts/test.sh and
# scripts/test_sanitized.sh, so that each test runs once.
#   the sanitized run: the tests labelled cpu_host (cmt_model_tests and cmt_cli_tests, cm-tune's own host
#     C++) but those matching host_unsanitized;
#   the main run: every other test, that is the tests not labelled cpu_host (NVRTC and nvcc in
#     cmt_cuda_tests, the GPU tests, the Python, Docs, Layers and Slurm checks) and those matching
#     host_unsanitized.
# Not sanitized: RecordCalls (most of its time is nvcc building the recording program; the @file
# size lists it tunes are parsed by code the sanitized Sizes and SizesFuzz tests run),
# SpaceBuiltin.EveryPresetEnumerates (36 s under ASan for full.toml's large space; the other space
# tests enumerate with the same code), and the forty rounds of ConcurrentTunes on an existing database
# (a minute and a half without ASan; the sanitized ConcurrentTunes.FourCalibratingTunesOfANewDatabaseAllSucceed
# runs the same code).
# shellcheck disable=SC2034  # read by the scripts that source this file
host_unsanitized='^(RecordCalls[.].*|SpaceBuiltin[.]EveryPresetEnumerates|ConcurrentTunes[.]TwoAndFourCalibratingTunesOfAnExistingDatabaseAllSucceed)$'
