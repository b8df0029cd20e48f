/* pdb_sample.c - a DLL whose PDB lld-link writes at build time (CMake,
 * pdb_lld_sample): a second producer of PDBs, 64-bit, for tests/test_pdb.py
 * (MSVC wrote CppCon.pdb, 32-bit). A static function gives an S_LPROC32,
 * the others S_GPROC32 and publics; no C runtime. */
__attribute__((noinline)) static int helper(int x) { return x * 3 + 1; }
__attribute__((noinline)) int other(int b) { return helper(b) - 7; }
__declspec(dllexport) int exported(int a) { return helper(a) + other(a + 1); }
int entry(void *a, unsigned b, void *c) {
    (void)a;
    (void)b;
    (void)c;
    return 1;
}
