


aConst


bConst

sumAddV2ab