// A C model of the AVX2 f32 LayerNorm row loops (crates/kernels/src/row.rs, the f32 store of
// crates/kernels/src/simd/x86.rs) over 4096 rows of 4096 f32 streamed from DRAM, on T threads,
// against a non-temporal copy and glibc's memcpy of the same bytes (docs/speed.md, "On a CPU
// without AVX-512"). Not part of the build; on x86-64:
//
//   gcc -O2 -mavx2 -mfma -pthread avx2_rows.c -o avx2_rows && ./avx2_rows 2
//
// -DOLD: the store before this model was added (f32 assembled with vinsertf128, the
// window mask put in lane order with vpermq). Prints the best of nine runs of each variant:
// ntcopy, memcpy; rows: statistics loop then output loop, row by row, requesting the next
// row's lines in the output loop (the kernels' loops), also with no request, with γ and β
// in f32, requesting two rows ahead, and with the output's constants independent of the
// statistics (so that the two loops may overlap); fused: the output loop of row r with the
// statistics of row r + 1; the statistics loop alone; the output loop alone; lookahead: the
// statistics of row r + 1 before the output of row r (requesting row r + 2); kernel loop:
// the rows with the kernels' own output loop as compiled (kernel_outrow). The flag bytes
// are OR-ed in a register (the kernels store them, as kernel_outrow does), the lane-order
// table is loaded but left zero (its contents do not change the timing), and no lane is
// ever flagged.
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_model.h"
#define N (16u << 20)
#ifndef D
#define D 4096
#endif
#define ROWS (N / D)
static float *x, *y;
static double g[D] __attribute__((aligned(64))), b[D] __attribute__((aligned(64)));
static float g32[D] __attribute__((aligned(64))), b32[D] __attribute__((aligned(64)));
static unsigned char lut[256];
static int T = 2, variant;
static volatile double sink; // keeps the statistics of variant 6 from being dropped
static inline void stats(const float *p, double *out){
  __m256d s0=_mm256_setzero_pd(),s1=s0,s2=s0,s3=s0,q0=s0,q1=s0,q2=s0,q3=s0;
  for(int i=0;i<D;i+=16){
    __m256d a=_mm256_cvtps_pd(_mm_load_ps(p+i)), c=_mm256_cvtps_pd(_mm_load_ps(p+i+4));
    __m256d e=_mm256_cvtps_pd(_mm_load_ps(p+i+8)), f=_mm256_cvtps_pd(_mm_load_ps(p+i+12));
    s0=_mm256_add_pd(s0,a); s1=_mm256_add_pd(s1,c); s2=_mm256_add_pd(s2,e); s3=_mm256_add_pd(s3,f);
    q0=_mm256_fmadd_pd(a,a,q0); q1=_mm256_fmadd_pd(c,c,q1); q2=_mm256_fmadd_pd(e,e,q2); q3=_mm256_fmadd_pd(f,f,q3);
  }
  __m256d s=_mm256_add_pd(_mm256_add_pd(s0,s1),_mm256_add_pd(s2,s3)), q=_mm256_add_pd(_mm256_add_pd(q0,q1),_mm256_add_pd(q2,q3));
  double t[8]; _mm256_storeu_pd(t,s); _mm256_storeu_pd(t+4,q);
  out[0]=t[0]+t[1]+t[2]+t[3]; out[1]=t[4]+t[5]+t[6]+t[7];
}
static inline __m256d ldg(const double *p64, const float *p32, int i, int f32){ return f32? _mm256_cvtps_pd(_mm_load_ps(p32+i)) : _mm256_load_pd(p64+i); }
static inline unsigned char out8(const float *p, float *q, int i, __m256d R, __m256d MR, int f32gb, int nt){
  __m256i off=_mm256_set1_epi32(0x10), msk=_mm256_set1_epi32(0x1fffffe0);
  __m256 abs=_mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), sm=_mm256_set1_ps(1e-30f);
  __m256d a=_mm256_fmadd_pd(_mm256_cvtps_pd(_mm_load_ps(p+i)),R,MR);
  __m256d c=_mm256_fmadd_pd(_mm256_cvtps_pd(_mm_load_ps(p+i+4)),R,MR);
  a=_mm256_fmadd_pd(a,ldg(g,g32,i,f32gb),ldg(b,b32,i,f32gb));
  c=_mm256_fmadd_pd(c,ldg(g,g32,i+4,f32gb),ldg(b,b32,i+4,f32gb));
  if(nt){_mm_stream_ps(q+i,_mm256_cvtpd_ps(a)); _mm_stream_ps(q+i+4,_mm256_cvtpd_ps(c));}
  else {_mm_storeu_ps(q+i,_mm256_cvtpd_ps(a)); _mm_storeu_ps(q+i+4,_mm256_cvtpd_ps(c));}
#ifdef OLD
  __m256 n=_mm256_set_m128(_mm256_cvtpd_ps(c),_mm256_cvtpd_ps(a));
  __m256 s=_mm256_cmp_ps(_mm256_and_ps(n,abs),sm,_CMP_NGT_UQ);
  __m256i lo=_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(a),_mm256_castpd_ps(c),0x88));
  __m256i w=_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_add_epi32(lo,off),msk),_mm256_setzero_si256());
  __m256i o; __asm__("vpermq $0xd8,%1,%0":"=x"(o):"x"(w));
  return _mm256_movemask_ps(_mm256_or_ps(s,_mm256_castsi256_ps(o)));
#else
  __m256i lo=_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(a),_mm256_castpd_ps(c),0x88));
  __m256 hi=_mm256_shuffle_ps(_mm256_castpd_ps(a),_mm256_castpd_ps(c),0xdd);
  __m256 s=_mm256_cmp_ps(_mm256_and_ps(hi,abs),sm,_CMP_NGT_UQ);
  __m256i w=_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_add_epi32(lo,off),msk),_mm256_setzero_si256());
  return lut[_mm256_movemask_ps(_mm256_or_ps(s,_mm256_castsi256_ps(w)))];
#endif
}
// The kernels' own output loop (`objdump -d` of the release binary at 5ad59bd, the streamed
// f32 LayerNorm loop of a row with a next one), pasted as it is: legacy-SSE movntps behind
// a lea (std's _mm_stream_ps is inline assembly), two bounds checks per line, the flag
// bytes stored. Variant 11 runs it where variant 2 runs outrow.
static unsigned char flags[D / 8];
__attribute__((noinline)) static void kernel_outrow(const float *p, float *q, double r, double mr, const float *next){
  __m256d R=_mm256_set1_pd(r), MR=_mm256_set1_pd(mr);
  __m256i off=_mm256_set1_epi32(0x10), msk=_mm256_set1_epi32(0x1fffffe0);
  __m256 sm=_mm256_set1_ps(1e-30f), abs=_mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  register const double *r8 __asm__("r8")=g; register const double *r9 __asm__("r9")=b;
  register const unsigned char *r13 __asm__("r13")=lut; register const float *r14 __asm__("r14")=next?next:p;
  long iters=D/16;
#define KSTORE(a,b,o1,o2) "lea " o1 "(%%rax,%%r12,1),%%rdi\n lea " o2 "(%%rax,%%r12,1),%%r10\n movntps %%" a ",(%%rdi)\n movntps %%" b ",(%%r10)\n"
  __asm__ volatile(
   "vmovupd %[MR],%%ymm0\n vmovupd %[R],%%ymm1\n vmovdqu %[off],%%ymm3\n vmovdqu %[msk],%%ymm4\n vmovups %[sm],%%ymm5\n vmovups %[abs],%%ymm7\n"
   "mov $1,%%r15d\n xor %%r12d,%%r12d\n vpxor %%xmm6,%%xmm6,%%xmm6\n .p2align 4\n1:\n"
   "prefetcht0 (%%r14,%%r12,1)\n lea -0x1(%%r15),%%rdi\n cmp %%rsi,%%rdi\n jae 2f\n"
   "vcvtps2pd (%%rcx,%%r12,1),%%ymm8\n vcvtps2pd 0x10(%%rcx,%%r12,1),%%ymm9\n vmovupd (%%r8,%%r12,2),%%ymm10\n vmovupd 0x20(%%r8,%%r12,2),%%ymm11\n"
   "vfmadd213pd %%ymm0,%%ymm1,%%ymm8\n vfmadd213pd %%ymm0,%%ymm1,%%ymm9\n vfmadd213pd (%%r9,%%r12,2),%%ymm10,%%ymm8\n vfmadd213pd 0x20(%%r9,%%r12,2),%%ymm11,%%ymm9\n"
   "vcvtpd2ps %%ymm8,%%xmm10\n vcvtpd2ps %%ymm9,%%xmm11\n" KSTORE("xmm10","xmm11","0","0x10")
   "vshufps $0x88,%%ymm9,%%ymm8,%%ymm10\n vshufps $0xdd,%%ymm9,%%ymm8,%%ymm8\n vpaddd %%ymm3,%%ymm10,%%ymm9\n vpand %%ymm4,%%ymm9,%%ymm9\n vpcmpeqd %%ymm6,%%ymm9,%%ymm9\n"
   "vandps %%ymm7,%%ymm8,%%ymm8\n vcmpngt_uqps %%ymm5,%%ymm8,%%ymm8\n vpor %%ymm8,%%ymm9,%%ymm8\n vmovmskps %%ymm8,%%edi\n movzbl (%%r13,%%rdi,1),%%edi\n"
   "mov %%dil,-0x1(%%rdx,%%r15,1)\n cmp %%rsi,%%r15\n jae 2f\n"
   "vmovupd 0x40(%%r8,%%r12,2),%%ymm8\n vcvtps2pd 0x20(%%rcx,%%r12,1),%%ymm9\n vmovupd 0x60(%%r8,%%r12,2),%%ymm10\n vcvtps2pd 0x30(%%rcx,%%r12,1),%%ymm11\n"
   "vfmadd213pd %%ymm0,%%ymm1,%%ymm9\n vfmadd213pd %%ymm0,%%ymm1,%%ymm11\n vfmadd213pd 0x40(%%r9,%%r12,2),%%ymm8,%%ymm9\n vfmadd213pd 0x60(%%r9,%%r12,2),%%ymm10,%%ymm11\n"
   "vcvtpd2ps %%ymm9,%%xmm8\n vcvtpd2ps %%ymm11,%%xmm10\n" KSTORE("xmm8","xmm10","0x20","0x30")
   "vshufps $0x88,%%ymm11,%%ymm9,%%ymm8\n vshufps $0xdd,%%ymm11,%%ymm9,%%ymm9\n vpaddd %%ymm3,%%ymm8,%%ymm8\n vpand %%ymm4,%%ymm8,%%ymm8\n vpcmpeqd %%ymm6,%%ymm8,%%ymm8\n"
   "vandps %%ymm7,%%ymm9,%%ymm9\n vcmpngt_uqps %%ymm5,%%ymm9,%%ymm9\n vpor %%ymm9,%%ymm8,%%ymm8\n vmovmskps %%ymm8,%%edi\n movzbl (%%r13,%%rdi,1),%%edi\n"
   "mov %%dil,(%%rdx,%%r15,1)\n add $0x40,%%r12\n add $0x2,%%r15\n dec %%rbx\n jne 1b\n2:\n"
   : "+b"(iters)
   : "c"(p), "a"(q), "d"(flags), "S"((long)(D/8)), "r"(r8), "r"(r9), "r"(r13), "r"(r14),
     [MR]"m"(MR), [R]"m"(R), [off]"m"(off), [msk]"m"(msk), [sm]"m"(sm), [abs]"m"(abs)
   : "rdi","r10","r12","r15","xmm0","xmm1","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","memory","cc");
#undef KSTORE
}
static void outrow(const float *p, float *q, double r, double mr, const float *next, int dist, int f32gb){
  __m256d R=_mm256_set1_pd(r), MR=_mm256_set1_pd(mr);
  unsigned char acc=0;
  for(int i=0;i<D;i+=16){
    if(next) _mm_prefetch((const char*)(next+i),_MM_HINT_T0);
    acc|=out8(p,q,i,R,MR,f32gb,1); acc|=out8(p,q,i+8,R,MR,f32gb,1);
  }
  if(acc==0xff) q[0]=0;
}
typedef struct {int t;} arg_t;
static void *work(void *vp){
  int t=((arg_t*)vp)->t; int r0=ROWS*t/T, r1=ROWS*(t+1)/T;
  double st[2];
  switch(variant){
  case 0: { size_t n=(size_t)(r1-r0)*D; // NT copy
    for(size_t i=0;i<n;i+=8){ __m256 v=_mm256_load_ps(x+(size_t)r0*D+i); _mm256_stream_ps(y+(size_t)r0*D+i,v);} break;}
  case 1: // glibc memcpy
    memcpy(y+(size_t)r0*D,x+(size_t)r0*D,(size_t)(r1-r0)*D*4); break;
  case 2: case 3: case 4: case 5: case 6: // rows: prefetch next (2), none (3), f32 gb (4), prefetch 2 ahead (5), prefetch t0 of next in stats (6)
    for(int r=r0;r<r1;r++){
      const float *p=x+(size_t)r*D;
      const float *nx = variant==3? 0 : (variant==5 ? (r+2<r1? p+2*D:0) : (r+1<r1? p+D:0));
      if(variant==6){ // the output constants independent of the statistics (their sum kept in sink)
        stats(p,st); sink+=st[0]; outrow(p,y+(size_t)r*D,0.7,0.1,nx,1,0);
      } else { stats(p,st); outrow(p,y+(size_t)r*D,0.7+st[0]*1e-30,0.1,nx,1,variant==4); }
    }
    break;
  case 7: // fused: out(r) with stats(r+1) interleaved per 16
    stats(x+(size_t)r0*D,st);
    for(int r=r0;r<r1;r++){
      const float *p=x+(size_t)r*D, *pn=(r+1<r1)? p+D : p; const float *pf=(r+2<r1)? p+2*D:0;
      __m256d R=_mm256_set1_pd(0.7), MR=_mm256_set1_pd(0.1);
      __m256d s0=_mm256_setzero_pd(),s1=s0,q0=s0,q1=s0; unsigned char acc=0; float *q=y+(size_t)r*D;
      for(int i=0;i<D;i+=8){
        if(pf && (i&15)==0) _mm_prefetch((const char*)(pf+i),_MM_HINT_T0);
        acc|=out8(p,q,i,R,MR,0,1);
        __m256d a=_mm256_cvtps_pd(_mm_load_ps(pn+i)), c=_mm256_cvtps_pd(_mm_load_ps(pn+i+4));
        s0=_mm256_add_pd(s0,a); s1=_mm256_add_pd(s1,c); q0=_mm256_fmadd_pd(a,a,q0); q1=_mm256_fmadd_pd(c,c,q1);
      }
      if(acc==0xff) q[0]=0;
      double tt[4]; _mm256_storeu_pd(tt,_mm256_add_pd(_mm256_add_pd(s0,s1),_mm256_add_pd(q0,q1))); st[0]=tt[0]; sink+=tt[0];
    }
    break;
  case 10: // lookahead: statistics of row r + 1, then the output of row r (whose constants
           // are known by then), requesting row r + 2
    stats(x+(size_t)r0*D,st);
    for(int r=r0;r<r1;r++){
      const float *p=x+(size_t)r*D; double nx[2]={0,0};
      if(r+1<r1) stats(p+D,nx);
      outrow(p,y+(size_t)r*D,0.7+st[0]*1e-30,0.1,(r+2<r1)? p+2*D:0,1,0);
      st[0]=nx[0]; st[1]=nx[1];
    }
    break;
  case 11: // the kernels' output loop as compiled (kernel_outrow), requesting the next row
    for(int r=r0;r<r1;r++){
      const float *p=x+(size_t)r*D;
      stats(p,st); kernel_outrow(p,y+(size_t)r*D,0.7+st[0]*1e-30,0.1,r+1<r1? p+D:0);
    }
    break;
  case 8: // stats only (read stream + compute)
    for(int r=r0;r<r1;r++) stats(x+(size_t)r*D,st); if(st[0]==1.2345) y[0]=1; break;
  case 9: // output only (reads x once, NT writes)
    for(int r=r0;r<r1;r++) outrow(x+(size_t)r*D,y+(size_t)r*D,0.7,0.1,0,1,0); break;
  }
  _mm_sfence();
  return 0;
}
int main(int argc,char**argv){
  T=argc>1?atoi(argv[1]):2;
  x=aligned_alloc(64,(size_t)N*4); y=aligned_alloc(64,(size_t)N*4);
  for(size_t i=0;i<N;i++){x[i]=(float)(i%97)*0.01f; y[i]=0;}
  for(int i=0;i<D;i++){g[i]=1+i*1e-4;b[i]=i*1e-5;g32[i]=g[i];b32[i]=b[i];}
  const char *names[]={"ntcopy","memcpy","rows(pf next)","rows(no pf)","rows f32gb","rows(pf +2)","rows(same)","fused","stats only","out only","lookahead","kernel loop"};
  double best[12]; for(int v=0;v<12;v++)best[v]=1e9;
  for(int rep=0;rep<9;rep++) for(int v=0;v<12;v++){
    variant=v; pthread_t th[8]; arg_t a[8]; double t0=now();
    for(int t=0;t<T;t++){a[t].t=t; pthread_create(&th[t],0,work,&a[t]);}
    for(int t=0;t<T;t++) pthread_join(th[t],0);
    double dt=now()-t0; if(dt<best[v])best[v]=dt;
  }
  for(int v=0;v<12;v++) printf("%-14s %.2f ms  x ntcopy %.2f\n",names[v],best[v]*1e3,best[0]/best[v]);
}
