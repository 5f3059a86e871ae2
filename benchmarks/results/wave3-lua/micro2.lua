local n = 2000000
local function bench(name, f) local best=1e9 for r=1,5 do local t=os.clock(); f(); best=math.min(best,os.clock()-t) end print(string.format('%-28s %6.1f ns', name, best*1e9/n)) end
bench('empty', function() for i=1,n do local a,b,c,d,e,f = 1,2,3,4,5,6 end end)
bench('closure 0 upval', function() for i=1,n do local a,b,c,d,e,f = 1,2,3,4,5,6; local function g(x) return x end end end)
bench('closure 1 upval', function() for i=1,n do local a,b,c,d,e,f = 1,2,3,4,5,6; local function g(x) return a end end end)
bench('closure 6 upval', function() for i=1,n do local a,b,c,d,e,f = 1,2,3,4,5,6; local function g(x) return a,b,c,d,e,f end end end)
bench('2 closures 6 shared upval', function() for i=1,n do local a,b,c,d,e,f = 1,2,3,4,5,6; local function g(x) return a,b,c,d,e,f end; local function h(x) return a,b,c,d,e,f end end end)
