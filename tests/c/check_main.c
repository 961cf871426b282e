/*
** check_main.c -- runs every Check suite of the C runtime.
**   make KG_CUDA=0 KG_HIP=0 build/check_kg && build/check_kg
** Exit status 0 only when every test passed. CK_RUN_SUITE / CK_RUN_CASE
** select a subset as usual with Check (suites: ValidationTest, DispatchTest,
** GemmTest, ..., MfmaTile16x16x16Test, Transpose4x4HalfTest, RowsumTest, and
** for decode attention MathTest, PosEncTest, PageTest, SingleDecodeTest,
** BatchDecodeTest, CascadeTest); KG_TEST_TIMING=1 prints the time of each
** GemmTest case.
*/
#include <stdlib.h>

#include "test_util.h"

int main(void) {
  SRunner *sr = srunner_create(validation_suite());
  srunner_add_suite(sr, dispatch_suite());
  srunner_add_suite(sr, gemm_suite());
  srunner_add_suite(sr, dualgemm_suite());
  srunner_add_suite(sr, fp4_suite());
  srunner_add_suite(sr, gemm_fp4_suite());
  srunner_add_suite(sr, dualgemm_fp4_suite());
  srunner_add_suite(sr, wave_mfma_suite());
  srunner_add_suite(sr, wave_transpose_suite());
  srunner_add_suite(sr, wave_rowsum_suite());
  srunner_add_suite(sr, math_suite());
  srunner_add_suite(sr, pos_enc_suite());
  srunner_add_suite(sr, page_suite());
  srunner_add_suite(sr, single_decode_suite());
  srunner_add_suite(sr, batch_decode_suite());
  srunner_add_suite(sr, cascade_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
