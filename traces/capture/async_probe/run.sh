cd build_asyncprobe
nvcc -O2 -o probe probe.cu || exit 1
for m in gran place remap2 pending; do echo "== $m"; ./probe $m; done
for t in varlen_infer llm_decode transformer_train; do ./probe replaysync $t.trace $OUT/sync_$t.log; done
