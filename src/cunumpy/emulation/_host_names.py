"""Names the host's C and POSIX headers declare at global scope that CUDA does not have.

The CUDA emulator's runtime includes host headers (``<cstdio>``, ``<cstdlib>``, ``<cstring>``,
``<ctime>``, ``<cmath>``, ``<sys/mman.h>``, ``<unistd.h>``), and the compiler's default
``_GNU_SOURCE`` makes them declare more, so a kernel's own global ``__constant__ float gamma;``
or ``__device__ int index;`` would clash with a C library function although NVRTC accepts it.
The list was made by compiling the runtime header with ``int NAME;`` for every function exported
by glibc's libc and libm and keeping the names that clash, less the C library functions CUDA
provides on the device itself (the math library, ``printf``, ``malloc``, ``memcpy``, ...). A
kernel that declares one of them at global scope gets it renamed (see :mod:`._cuda_names`); the
list only has to be a superset, so a different C library costs nothing but a missed rename.
"""

from __future__ import annotations

__all__ = ["HOST_NAMES"]

HOST_NAMES = frozenset("""
    a64l abort access acct alarm aligned_alloc arc4random arc4random_buf arc4random_uniform
    asctime asctime_r asprintf atof atoi atol atoll basename bcmp bcopy brk bsearch bzero
    canonicalize_file_name chdir chown chroot clearenv clearerr clearerr_unlocked clock_adjtime
    clock_getcpuclockid clock_getres clock_gettime clock_nanosleep clock_settime close
    close_range closefrom confstr copy_file_range ctermid ctime ctime_r cuserid daemon difftime
    div dprintf drand48 drand48_r drem dremf dreml dup dup2 dup3 dysize eaccess ecvt ecvt_r
    endusershell erand48 erand48_r euidaccess execl execle execlp execv execve execveat execvp
    execvpe exit explicit_bzero faccessat fchdir fchown fchownat fclose fcloseall fcvt fcvt_r
    fdatasync fdopen feof feof_unlocked ferror ferror_unlocked fexecve fflush fflush_unlocked
    ffs ffsl ffsll fgetc fgetc_unlocked fgetpos fgetpos64 fgets fgets_unlocked fileno
    fileno_unlocked finite finitef finitel flockfile fmemopen fopen fopen64 fopencookie fork
    fpathconf fprintf fputc fputc_unlocked fputs fputs_unlocked fread fread_unlocked freopen
    freopen64 fscanf fseek fseeko fseeko64 fsetpos fsetpos64 fsync ftell ftello ftello64
    ftruncate ftruncate64 ftrylockfile funlockfile fwrite fwrite_unlocked gamma gammaf gammal
    gcvt get_current_dir_name getc getc_unlocked getchar getchar_unlocked getcwd getdate
    getdate_r getdelim getdomainname getdtablesize getegid getentropy getenv geteuid getgid
    getgroups gethostid gethostname getline getloadavg getlogin getlogin_r getopt getpagesize
    getpass getpgid getpgrp getpid getppid getpt getresgid getresuid getsid getsubopt gettid
    getuid getusershell getw getwd gmtime gmtime_r grantpt group_member index initstate
    initstate_r isatty isinff isinfl isnanf isnanl jrand48 jrand48_r l64a lchown lcong48
    lcong48_r ldiv lgamma_r lgammaf_r lgammal_r link linkat lldiv localtime localtime_r lockf
    lockf64 lrand48 lrand48_r lseek lseek64 madvise mblen mbstowcs mbtowc memccpy memchr memcmp
    memfd_create memfrob memmem memmove mempcpy memrchr mincore mkdtemp mkostemp mkostemp64
    mkostemps mkostemps64 mkstemp mkstemp64 mkstemps mkstemps64 mktemp mktime mlock mlock2
    mlockall mmap mmap64 mprotect mrand48 mrand48_r mremap msync munlock munlockall munmap
    nanosleep nice nrand48 nrand48_r obstack_printf obstack_vprintf on_exit open_memstream
    pathconf pause pclose perror pipe pipe2 pkey_alloc pkey_free pkey_get pkey_mprotect pkey_set
    popen posix_madvise posix_memalign posix_openpt pread pread64 process_madvise
    process_mrelease profil pselect ptsname ptsname_r putc putc_unlocked putchar
    putchar_unlocked putenv puts putw pwrite pwrite64 qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort
    qsort_r quick_exit rand rand_r random random_r rawmemchr read readlink readlinkat
    reallocarray realpath remap_file_pages remove rename renameat renameat2 revoke rewind rindex
    rmdir rpmatch sbrk scalb scalbf scalbl scanf secure_getenv seed48 seed48_r select setbuf
    setbuffer setdomainname setegid setenv seteuid setgid sethostid sethostname setlinebuf
    setlogin setpgid setpgrp setregid setresgid setresuid setreuid setsid setstate setstate_r
    setuid setusershell setvbuf shm_open shm_unlink sigabbrev_np sigdescr_np significand
    significandf significandl sincosl sleep snprintf sprintf srand srand48 srand48_r srandom
    srandom_r sscanf stpcpy stpncpy strcasecmp strcasecmp_l strcasestr strcat strchr strchrnul
    strcmp strcoll strcoll_l strcpy strcspn strdup strerror strerror_l strerror_r
    strerrordesc_np strerrorname_np strfromd strfromf strfromf128 strfromf32 strfromf32x
    strfromf64 strfromf64x strfroml strfry strftime strftime_l strlen strncasecmp strncasecmp_l
    strncat strncmp strncpy strndup strnlen strpbrk strptime strptime_l strrchr strsep strsignal
    strspn strstr strtod strtod_l strtof strtof128 strtof128_l strtof32 strtof32_l strtof32x
    strtof32x_l strtof64 strtof64_l strtof64x strtof64x_l strtof_l strtok strtok_r strtol
    strtol_l strtold strtold_l strtoll strtoll_l strtoq strtoul strtoul_l strtoull strtoull_l
    strtouq strverscmp strxfrm strxfrm_l swab symlink symlinkat sync syncfs syscall sysconf
    system tcgetpgrp tcsetpgrp tempnam time timegm timelocal timer_create timer_delete
    timer_getoverrun timer_gettime timer_settime timespec_get timespec_getres tmpfile tmpfile64
    tmpnam tmpnam_r truncate truncate64 ttyname ttyname_r ttyslot tzset ualarm ungetc unlink
    unlinkat unlockpt unsetenv usleep valloc vasprintf vdprintf vfork vfprintf vfscanf vhangup
    vscanf vsnprintf vsprintf vsscanf wcstombs wctomb write
""".split())
