break shelf.h:21
break shelf::Stack<shelf::Label>::push
run
bt
info args
info locals
ptype this
ptype shelf::Label
list
continue
continue
bt
info args
print value
print *this
finish
continue
bt
print item
print total
print items_
ptype total
continue
bt
print item
print total
