// A C model of the AVX2 f32 LayerNorm row loops (src/kernels/row.rs, the f32 store of
// src/kernels/simd/x86.rs) over 4096 rows of 4096 f32 streamed from DRAM, on T threads,
// against a non-temporal copy and glibc's memcpy of the same bytes (README, "On a CPU
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
// statistics of row r + 1 before the output of row r (requesting row r + 2). The flag bytes
// are OR-ed in a register (the kernels store them), the lane-order table is loaded but left
// zero (its contents do not change the timing), and no lane is ever flagged.
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
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
  const char *names[]={"ntcopy","memcpy","rows(pf next)","rows(no pf)","rows f32gb","rows(pf +2)","rows(same)","fused","stats only","out only","lookahead"};
  double best[11]; for(int v=0;v<11;v++)best[v]=1e9;
  for(int rep=0;rep<9;rep++) for(int v=0;v<11;v++){
    variant=v; pthread_t th[8]; arg_t a[8]; double t0=now();
    for(int t=0;t<T;t++){a[t].t=t; pthread_create(&th[t],0,work,&a[t]);}
    for(int t=0;t<T;t++) pthread_join(th[t],0);
    double dt=now()-t0; if(dt<best[v])best[v]=dt;
  }
  for(int v=0;v<11;v++) printf("%-14s %.2f ms  x ntcopy %.2f\n",names[v],best[v]*1e3,best[0]/best[v]);
}
