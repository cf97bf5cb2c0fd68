// The AVX2 loops of a 16-bit row of 4096 in cache, in variants (docs/speed.md, "On a CPU without
// AVX-512", the entry on bf16 widened with no lane-crossing instruction). Not part of the
// build; on x86-64:
//
//   gcc -O2 -mavx2 -mfma -mf16c avx2_16bit.c -o avx2_16bit && ./avx2_16bit
//
// Each figure: best of 2000 × 10 calls, in TSC ticks per row, or as a ratio to the first
// variant of its line. Statistics (Σx, Σx² in f64): f16 widened by one 256-bit vcvtph2ps
// and vextractf128 (the kernels) or by two 128-bit vcvtph2ps; bf16 by vpmovzxwd and a shift
// (before) or by vpunpcklwd/vpunpckhwd with zeros (the kernels); "widen" also stores x − c
// in f64, as the kernels do for rows of up to 16384. Output pass of a widened row (x − c
// in f64, γ and β in f64, the f16 store and its filter), against: the store on 128-bit
// halves; x read again as f16; γ and β in f32 or as f16; and the bf16 store on halves.
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <x86intrin.h>
#define D 4096
static uint16_t xs[D] __attribute__((aligned(64)));
static uint16_t bs[D] __attribute__((aligned(64)));
static double wide[D] __attribute__((aligned(64)));
typedef __m256d V;
static inline void ldA(const uint16_t*p, V*a, V*b){ __m256 f=_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); *a=_mm256_cvtps_pd(_mm256_castps256_ps128(f)); *b=_mm256_cvtps_pd(_mm256_extractf128_ps(f,1)); }
static inline void ldB(const uint16_t*p, V*a, V*b){ *a=_mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)p))); *b=_mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)(p+4)))); }
static inline void bfA(const uint16_t*p, V*a, V*b){ __m256 f=_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)),16)); *a=_mm256_cvtps_pd(_mm256_castps256_ps128(f)); *b=_mm256_cvtps_pd(_mm256_extractf128_ps(f,1)); }
static inline void bfB(const uint16_t*p, V*a, V*b){ __m128i h=_mm_loadu_si128((const __m128i*)p), z=_mm_setzero_si128(); *a=_mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(z,h))); *b=_mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpackhi_epi16(z,h))); }
#define STATS(NAME, LD, WIDEN) __attribute__((noinline)) double NAME(const uint16_t*x){ V s0=_mm256_setzero_pd(),s1=s0,s2=s0,s3=s0,q0=s0,q1=s0,q2=s0,q3=s0; V c=_mm256_set1_pd(0.25); \
 for(int i=0;i<D;i+=16){ V a,b,e,f; LD(x+i,&a,&b); LD(x+i+8,&e,&f); if(WIDEN){a=_mm256_sub_pd(a,c);b=_mm256_sub_pd(b,c);e=_mm256_sub_pd(e,c);f=_mm256_sub_pd(f,c); _mm256_store_pd(wide+i,a);_mm256_store_pd(wide+i+4,b);_mm256_store_pd(wide+i+8,e);_mm256_store_pd(wide+i+12,f);} \
  s0=_mm256_add_pd(s0,a); s1=_mm256_add_pd(s1,b); s2=_mm256_add_pd(s2,e); s3=_mm256_add_pd(s3,f); q0=_mm256_fmadd_pd(a,a,q0); q1=_mm256_fmadd_pd(b,b,q1); q2=_mm256_fmadd_pd(e,e,q2); q3=_mm256_fmadd_pd(f,f,q3);} \
 V s=_mm256_add_pd(_mm256_add_pd(s0,s1),_mm256_add_pd(s2,s3)); V q=_mm256_add_pd(_mm256_add_pd(q0,q1),_mm256_add_pd(q2,q3)); s=_mm256_add_pd(s,q); double r[4]; _mm256_storeu_pd(r,s); return r[0]+r[1]+r[2]+r[3]; }
STATS(fA,ldA,0) STATS(fB,ldB,0) STATS(gA,bfA,0) STATS(gB,bfB,0) STATS(wA,ldA,1) STATS(wB,ldB,1) STATS(vA,bfA,1) STATS(vB,bfB,1)
typedef double(*SF)(const uint16_t*);
static volatile double sinkv; static double best_stats(SF f,const uint16_t*x){ double m=1e30; for(int r=0;r<2000;r++){ unsigned long t=__rdtsc(); for(int k=0;k<10;k++) sinkv+=f(x); double v=(double)(__rdtsc()-t)/10; if(v<m)m=v;} return m; }
typedef void(*F)(V,V,float);
static double g[D] __attribute__((aligned(64))), b[D] __attribute__((aligned(64)));
static uint16_t yout[D] __attribute__((aligned(64)));
static uint8_t flags[D/8];
static float g32[D] __attribute__((aligned(64))), b32[D] __attribute__((aligned(64))); static uint16_t gh[D] __attribute__((aligned(64))), bh[D] __attribute__((aligned(64)));

static inline __m256 small_mask(__m256 n, float sm){ __m256 m=_mm256_and_ps(n,_mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); return _mm256_cmp_ps(m,_mm256_set1_ps(sm),_CMP_NGT_UQ); }
static inline int mid_or_small(__m256 n,int low,int mid,float sm){ __m256i bits=_mm256_and_si256(_mm256_castps_si256(n),_mm256_set1_epi32(low)); __m256i on=_mm256_cmpeq_epi32(bits,_mm256_set1_epi32(mid)); return _mm256_movemask_ps(_mm256_or_ps(_mm256_castsi256_ps(on),small_mask(n,sm))); }
static inline __m128 small_mask4(__m128 n, float sm){ __m128 m=_mm_and_ps(n,_mm_castsi128_ps(_mm_set1_epi32(0x7fffffff))); return _mm_cmp_ps(m,_mm_set1_ps(sm),_CMP_NGT_UQ); }
static inline __m128i mid_or_small4(__m128 n,int low,int mid,float sm){ __m128i bits=_mm_and_si128(_mm_castps_si128(n),_mm_set1_epi32(low)); __m128i on=_mm_cmpeq_epi32(bits,_mm_set1_epi32(mid)); return _mm_castps_si128(_mm_or_ps(_mm_castsi128_ps(on),small_mask4(n,sm))); }
static inline int pack_masks(__m128i a, __m128i c){ __m128i p=_mm_packs_epi32(a,c); p=_mm_packs_epi16(p,p); return _mm_movemask_epi8(p)&0xff; }
static inline void compute(int i, V r, V mr, V*lo, V*hi){ *lo=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i),r,mr),_mm256_load_pd(g+i),_mm256_load_pd(b+i)); *hi=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i+4),r,mr),_mm256_load_pd(g+i+4),_mm256_load_pd(b+i+4)); }
__attribute__((noinline)) void f16_cur(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo,hi; compute(i,r,mr,&lo,&hi); __m256 n=_mm256_set_m128(_mm256_cvtpd_ps(hi),_mm256_cvtpd_ps(lo)); _mm_storeu_si128((__m128i*)(yout+i),_mm256_cvtps_ph(n,0)); flags[i/8]=mid_or_small(n,0x1fff,0x1000,sm);} }
__attribute__((noinline)) void bf16_cur(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo,hi; compute(i,r,mr,&lo,&hi); __m256 n=_mm256_set_m128(_mm256_cvtpd_ps(hi),_mm256_cvtpd_ps(lo)); __m256i bi=_mm256_add_epi32(_mm256_castps_si256(n),_mm256_set1_epi32(0x8000));
  __m256i hh=_mm256_setr_epi8(2,3,6,7,10,11,14,15,-1,-1,-1,-1,-1,-1,-1,-1,2,3,6,7,10,11,14,15,-1,-1,-1,-1,-1,-1,-1,-1); __m256i pk=_mm256_permute4x64_epi64(_mm256_shuffle_epi8(bi,hh),0x08); _mm_storeu_si128((__m128i*)(yout+i),_mm256_castsi256_si128(pk)); flags[i/8]=mid_or_small(n,0xffff,0x8000,sm);} }
__attribute__((noinline)) void bf16_half(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo,hi; compute(i,r,mr,&lo,&hi); __m128 a=_mm256_cvtpd_ps(lo), c=_mm256_cvtpd_ps(hi); __m128i k=_mm_set1_epi32(0x8000);
  __m128i ba=_mm_add_epi32(_mm_castps_si128(a),k), bc=_mm_add_epi32(_mm_castps_si128(c),k); __m128i pk=_mm_packus_epi32(_mm_srli_epi32(ba,16),_mm_srli_epi32(bc,16)); _mm_storeu_si128((__m128i*)(yout+i),pk); flags[i/8]=pack_masks(mid_or_small4(a,0xffff,0x8000,sm),mid_or_small4(c,0xffff,0x8000,sm));} }

static inline V ldh(const uint16_t*p){ return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)p))); }
static inline void store_half(int i, V lo, V hi, float sm){ __m128 a=_mm256_cvtpd_ps(lo), c=_mm256_cvtpd_ps(hi); _mm_storeu_si128((__m128i*)(yout+i),_mm_unpacklo_epi64(_mm_cvtps_ph(a,0),_mm_cvtps_ph(c,0))); flags[i/8]=pack_masks(mid_or_small4(a,0x1fff,0x1000,sm),mid_or_small4(c,0x1fff,0x1000,sm)); }
static inline void store_cur(int i, V lo, V hi, float sm){ __m256 n=_mm256_set_m128(_mm256_cvtpd_ps(hi),_mm256_cvtpd_ps(lo)); _mm_storeu_si128((__m128i*)(yout+i),_mm256_cvtps_ph(n,0)); flags[i/8]=mid_or_small(n,0x1fff,0x1000,sm); }
__attribute__((noinline)) void v1(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo=_mm256_fmadd_pd(_mm256_fmadd_pd(ldh(xs+i),r,mr),_mm256_load_pd(g+i),_mm256_load_pd(b+i)); V hi=_mm256_fmadd_pd(_mm256_fmadd_pd(ldh(xs+i+4),r,mr),_mm256_load_pd(g+i+4),_mm256_load_pd(b+i+4)); store_half(i,lo,hi,sm);} }
__attribute__((noinline)) void v0h(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo,hi; compute(i,r,mr,&lo,&hi); store_half(i,lo,hi,sm);} }

__attribute__((noinline)) void w32(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i),r,mr),_mm256_cvtps_pd(_mm_load_ps(g32+i)),_mm256_cvtps_pd(_mm_load_ps(b32+i))); V hi=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i+4),r,mr),_mm256_cvtps_pd(_mm_load_ps(g32+i+4)),_mm256_cvtps_pd(_mm_load_ps(b32+i+4))); store_cur(i,lo,hi,sm);} }
__attribute__((noinline)) void w16(V r, V mr, float sm){ for(int i=0;i<D;i+=8){ V lo=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i),r,mr),ldh(gh+i),ldh(bh+i)); V hi=_mm256_fmadd_pd(_mm256_fmadd_pd(_mm256_load_pd(wide+i+4),r,mr),ldh(gh+i+4),ldh(bh+i+4)); store_cur(i,lo,hi,sm);} }
static double best_out(F f){ double m=1e30; V r=_mm256_set1_pd(1.1),mr=_mm256_set1_pd(-0.3); for(int rep=0;rep<2000;rep++){ unsigned long t=__rdtsc(); for(int k=0;k<10;k++) f(r,mr,1e-30f); double v=(double)(__rdtsc()-t)/10; if(v<m)m=v;} return m; }
int main(){
 for(int i=0;i<D;i++){ xs[i]=0x3c00+(i*37%1000); bs[i]=0x3f80+(i*37%100);
  wide[i]=(i%97)*0.01-0.4; g[i]=1+(i%13)*0.01; b[i]=(i%7)*0.1-0.3; gh[i]=0x3c00+i%13; bh[i]=0x3400+i%7; g32[i]=g[i]; b32[i]=b[i]; }
 for(int rep=0;rep<3;rep++){
  double a=best_stats(fA,xs),b=best_stats(fB,xs),c=best_stats(gA,bs),d=best_stats(gB,bs),e=best_stats(wA,xs),f=best_stats(wB,xs),gg=best_stats(vA,bs),h=best_stats(vB,bs);
  printf("stats: f16 %.0f, 128-bit %.2f | bf16 vpmovzxwd %.0f, unpack %.2f | widen: f16 %.0f, 128-bit %.2f | bf16 %.0f, unpack %.2f\n",a,b/a,c,d/c,e,f/e,gg,h/gg);
  double o0=best_out(f16_cur),o1=best_out(v0h),o2=best_out(v1),o3=best_out(w32),o4=best_out(w16);
  double p0=best_out(bf16_cur),p1=best_out(bf16_half);
  printf("output: f16 %.0f | store on halves %.2f | x read as f16 %.2f | γ, β in f32 %.2f | γ, β as f16 %.2f | bf16 %.0f, store on halves %.2f\n",o0,o1/o0,o2/o0,o3/o0,o4/o0,p0,p1/p0);
 }
 return 0; }
