# an unrelated module that shares the dotted file's first name part
VALUE = 1
