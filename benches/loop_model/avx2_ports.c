// Throughput of single AVX2 instruction forms and of pairs of them, on 16 independent
// chains, in TSC ticks per instruction (docs/speed.md, "On a CPU without AVX-512"): two forms
// that share a pipe take as long mixed as each alone. Not part of the build; on x86-64:
//
//   gcc -O2 -mavx2 -mfma -mf16c avx2_ports.c -o avx2_ports && ./avx2_ports
//
// On Zen 3 (2445 MHz TSC) vcvtps2pd, vcvtpd2ps, vinsertf128, vpermq and vpmovzxdq each
// took ≈ 0.8 ticks alone and ≈ 0.8 per instruction in any pair of them (one pipe), where
// vaddpd, vfmadd231pd, vshufps, vpaddd or vcmpps paired with a conversion took ≈ 0.4.
// The 256-bit vcvtph2ps and vcvtps2ph, vextractf128 and vpmovzxwd ymm share that pipe
// (≈ 0.8 paired with vcvtps2pd); the 128-bit vcvtph2ps, vcvtps2ph, vcvtps2pd and
// vpmovzxwd, and vpunpcklwd, do not (≈ 0.4 paired with it; the 128-bit conversions
// share the adds' pipes instead: ≈ 0.39 paired with vaddpd).
#include <immintrin.h>
#include <stdio.h>
#include <x86intrin.h>
#define N 10000000L
#define R(a,b,c,d,e,f,g,h) __asm__ volatile(""::"x"(a),"x"(b),"x"(c),"x"(d),"x"(e),"x"(f),"x"(g),"x"(h))
#define MIX(A,B) ({ __m256d a0=z,a1=z,a2=z,a3=z,a4=z,a5=z,a6=z,a7=z,b0=z,b1=z,b2=z,b3=z,b4=z,b5=z,b6=z,b7=z; \
  unsigned long t=__rdtsc(); for(long i=0;i<N;i++){ A(a0);B(b0);A(a1);B(b1);A(a2);B(b2);A(a3);B(b3);A(a4);B(b4);A(a5);B(b5);A(a6);B(b6);A(a7);B(b7);} \
  R(a0,a1,a2,a3,a4,a5,a6,a7); R(b0,b1,b2,b3,b4,b5,b6,b7); \
  (double)(__rdtsc()-t)/(16.0*N); })
#define ADDPD(a) __asm__("vaddpd %0,%0,%0":"+x"(a))
#define FMA(a) __asm__("vfmadd231pd %0,%0,%0":"+x"(a))
#define CSD(a) __asm__("vcvtps2pd %x0,%0":"+x"(a))
#define CDS(a) __asm__("vcvtpd2ps %0,%x0":"+x"(a))
#define PERMQ(a) __asm__("vpermq $0xd8,%0,%0":"+x"(a))
#define INS(a) __asm__("vinsertf128 $1,%x0,%0,%0":"+x"(a))
#define SHUF(a) __asm__("vshufps $0x88,%0,%0,%0":"+x"(a))
#define PADDD(a) __asm__("vpaddd %0,%0,%0":"+x"(a))
#define CMPPS(a) __asm__("vcmpngtps %0,%0,%0":"+x"(a))
#define PAND(a) __asm__("vpand %0,%0,%0":"+x"(a))
#define PMOVZX(a) __asm__("vpmovzxdq %x0,%0":"+x"(a))
#define PSLLQ(a) __asm__("vpsllq $3,%0,%0":"+x"(a))
#define MULPD(a) __asm__("vmulpd %0,%0,%0":"+x"(a))
#define CVTDQ(a) __asm__("vcvtdq2pd %x0,%0":"+x"(a))
#define PH2PSX(a) __asm__("vcvtph2ps %x0,%x0":"+x"(a))
#define PH2PSY(a) __asm__("vcvtph2ps %x0,%0":"+x"(a))
#define PS2PHX(a) __asm__("vcvtps2ph $0,%x0,%x0":"+x"(a))
#define PS2PHY(a) __asm__("vcvtps2ph $0,%0,%x0":"+x"(a))
#define EXT(a) __asm__("vextractf128 $1,%0,%x0":"+x"(a))
#define CSDX(a) __asm__("vcvtps2pd %x0,%x0":"+x"(a))
#define PMOVWD(a) __asm__("vpmovzxwd %x0,%0":"+x"(a))
#define PMOVWDX(a) __asm__("vpmovzxwd %x0,%x0":"+x"(a))
#define UNPKWD(a) __asm__("vpunpcklwd %0,%0,%0":"+x"(a))
#define MOVMSK(a) ({int r; __asm__ volatile("vmovmskps %1,%0":"=r"(r):"x"(a));})
#define P(A,B) printf("%-8s + %-8s %.3f ticks/op\n",#A,#B,MIX(A,B))
int main(){ __m256d z=_mm256_set1_pd(1.0);
 P(ADDPD,ADDPD); P(FMA,FMA); P(FMA,ADDPD); P(CSD,CSD); P(CDS,CDS); P(CSD,CDS); P(CSD,FMA); P(CSD,ADDPD); P(CDS,FMA); P(CDS,ADDPD);
 P(CSD,PERMQ); P(CDS,PERMQ); P(PERMQ,PERMQ); P(CSD,INS); P(CDS,INS); P(INS,INS); P(CSD,SHUF); P(CDS,SHUF); P(SHUF,SHUF); P(CSD,MOVMSK); P(CDS,MOVMSK); P(MOVMSK,MOVMSK);
 P(PH2PSY,CSD); P(PS2PHY,CSD); P(EXT,CSD); P(PMOVWD,CSD); P(PH2PSX,CSD); P(PS2PHX,CSD); P(CSDX,CSD); P(PMOVWDX,CSD); P(UNPKWD,CSD); P(CSDX,ADDPD); P(PH2PSX,ADDPD);
 P(CSD,PADDD); P(CDS,PADDD); P(PADDD,PADDD); P(CSD,CMPPS); P(CDS,CMPPS); P(FMA,PADDD); P(PAND,PAND); P(PMOVZX,PMOVZX); P(PMOVZX,CSD); P(PSLLQ,PSLLQ); P(PSLLQ, FMA); P(MULPD,MULPD);P(CVTDQ,CVTDQ);P(CVTDQ,CSD);
}
