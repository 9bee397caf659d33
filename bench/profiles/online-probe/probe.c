// A paced wake-up probe: 4 threads x 2,000 wake-ups/s for N seconds; prints the lateness
// of each wake-up from its due time (p50..max, microseconds). See run.sh beside it.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <stdint.h>
#define THREADS 4
#define RATE 2000
static int secs;
static uint64_t *lat[THREADS]; static int cnt[THREADS];
static uint64_t now_ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
static void* run(void*a){int id=(int)(long)a;uint64_t iv=1000000000ull/RATE;uint64_t start=now_ns();uint64_t n=(uint64_t)secs*RATE;lat[id]=malloc(n*8);
 for(uint64_t i=0;i<n;i++){uint64_t due=start+i*iv;uint64_t t=now_ns();if(t<due){struct timespec d={(due-t)/1000000000ull,(due-t)%1000000000ull};nanosleep(&d,0);} t=now_ns();lat[id][cnt[id]++]=t-due;}return 0;}
static int cmp(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
int main(int c,char**v){secs=atoi(v[1]);pthread_t t[THREADS];for(long i=0;i<THREADS;i++)pthread_create(&t[i],0,run,(void*)i);for(int i=0;i<THREADS;i++)pthread_join(t[i],0);
 int tot=0;for(int i=0;i<THREADS;i++)tot+=cnt[i];uint64_t*all=malloc(tot*8);int k=0;for(int i=0;i<THREADS;i++)for(int j=0;j<cnt[i];j++)all[k++]=lat[i][j];qsort(all,tot,8,cmp);
 printf("n=%d p50=%.1f p99=%.1f p99.9=%.1f p99.99=%.1f max=%.1f us\n",tot,all[tot/2]/1e3,all[tot*99/100]/1e3,all[tot*999/1000]/1e3,all[tot*9999/10000]/1e3,all[tot-1]/1e3);}
