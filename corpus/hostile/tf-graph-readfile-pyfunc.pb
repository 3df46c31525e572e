
)
pathConst*
valueBB/etc/passwd

readReadFilepath
-
targetConst*
valueBB/root/.bashrc
 
write	WriteFiletargetread
-
callbackPyFuncread*
token
pyfunc_0