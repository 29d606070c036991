# longjmp's half of the setjmp/longjmp runtime (see sjlj.c): the __c_longjmp exception tag, which
# clang's lowering catches in the function that called setjmp, and the function that throws it with
# a pointer to {env, val} (wgt_sjlj_thrown).
	.tagtype __c_longjmp i32
	.globl __c_longjmp
__c_longjmp:

	.globl __wasm_longjmp
	.type __wasm_longjmp,@function
__wasm_longjmp:
	.functype __wasm_longjmp (i32, i32) -> ()
	i32.const wgt_sjlj_thrown
	local.get 0
	i32.store 0
	i32.const wgt_sjlj_thrown
	local.get 1
	i32.store 4
	i32.const wgt_sjlj_thrown
	throw __c_longjmp
	unreachable
	end_function
